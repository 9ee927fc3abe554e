"""fairseq-train's config from its parsed command line, as fairseq's convert_namespace_to_omegaconf
makes it, composing only the options that differ from their defaults.

fairseq writes every field of every config group (about 250 for a fine-tuning run) as a Hydra
override string and composes them all: Hydra parses each with its ANTLR grammar and merges it,
about 0.6 s of a fine-tuning run's fixed cost on 2 CPU cores. An override that restates its field's
default changes nothing in the composition, so it is left out: the config is the same
(tests/test_fairseq_config.py compares both for every task kind)."""

from argparse import Namespace


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


def fairseq_config(args: Namespace):
    """convert_namespace_to_omegaconf(args), its Hydra composition given only the overrides that
    are not a field's default (fairseq's own for a nested Namespace)."""
    from fairseq.dataclass import utils

    every_field = utils.override_module_args
    defaults = default_overrides(args)

    def changed_fields(given: Namespace):
        overrides, deletes = every_field(given)
        if given is not args:
            return overrides, deletes
        return [override for override in overrides if override not in defaults], deletes

    utils.override_module_args = changed_fields
    try:
        return utils.convert_namespace_to_omegaconf(args)
    finally:
        utils.override_module_args = every_field
