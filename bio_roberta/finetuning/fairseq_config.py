"""fairseq-train's config from its parsed command line, as fairseq's convert_namespace_to_omegaconf
makes it, composed from the options that differ from their defaults and the config nodes it
chooses.

fairseq writes every field of every config group (about 250 for a fine-tuning run) as a Hydra
override string and composes them all: Hydra parses each with its ANTLR grammar and merges it, and
deep-copies every node of the ConfigStore (every task, model, criterion, optimizer, ... fairseq and
the plugin registered) before it loads the few it needs. An override that restates its field's
default changes nothing in the composition, and a group's other nodes are not read: the config is
the same (tests/test_fairseq_config.py compares both for every task kind), composed in half the
time (docs/cost.md, "Cost of a run")."""

import contextlib
from argparse import Namespace
from typing import Iterator


def default_overrides(args: Namespace) -> set[str]:
    """The override strings fairseq writes for a field left at its default: every field of
    FairseqConfig's groups and of the task, model and registry choices (criterion, optimizer, ...)
    that `args` makes."""
    from fairseq.dataclass import utils
    from fairseq.dataclass.configs import FairseqConfig
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq.registry import REGISTRIES
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    groups = [(name, field.type) for name, field in FairseqConfig.__dataclass_fields__.items()]
    groups.append(("task", TASK_DATACLASS_REGISTRY.get(getattr(args, "task", None))))
    groups += [
        (name, registry["dataclass_registry"].get(getattr(args, name, None)))
        for name, registry in REGISTRIES.items()
    ]
    model = ARCH_MODEL_REGISTRY.get(getattr(args, "arch", None))
    groups.append(("model", getattr(model, "__dataclass", None)))
    nothing_given = Namespace()
    return {
        override
        for name, dataclass in groups
        if dataclass is not None
        for override in utils._override_attr(name, dataclass, nothing_given)
    }


KEPT_NODES = {"config.yaml", "_dummy_empty_config_.yaml"}


@contextlib.contextmanager
def store_of_chosen_nodes(overrides: list[str]) -> Iterator[None]:
    """Hydra's ConfigStore, for the block, with only the chosen node of each group that an
    override `group=name` chooses and that the store holds (every other group, Hydra's own
    included, whole), and of the nodes outside groups only KEPT_NODES: fairseq stores each
    section of its primary config again beside it, which the composition never reads."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    whole = store.repo
    chosen = dict(override.split("=", 1) for override in overrides if "=" in override)
    store.repo = {
        key: (
            {f"{chosen[key]}.yaml": nodes[f"{chosen[key]}.yaml"]}
            if isinstance(nodes, dict) and f"{chosen.get(key)}.yaml" in nodes
            else nodes
        )
        for key, nodes in whole.items()
        if isinstance(nodes, dict) or key in KEPT_NODES
    }
    try:
        yield
    finally:
        store.repo = whole


def fairseq_config(args: Namespace):
    """convert_namespace_to_omegaconf(args), its Hydra composition given only the overrides that
    are not a field's default (fairseq's own for a nested Namespace) and only the store's chosen
    nodes."""
    from fairseq.dataclass import utils

    every_field = utils.override_module_args
    overrides, deletes = every_field(args)
    defaults = default_overrides(args)
    changed = [override for override in overrides if override not in defaults]

    def changed_fields(given: Namespace):
        return (changed, deletes) if given is args else every_field(given)

    utils.override_module_args = changed_fields
    try:
        with store_of_chosen_nodes(changed):
            return utils.convert_namespace_to_omegaconf(args)
    finally:
        utils.override_module_args = every_field
