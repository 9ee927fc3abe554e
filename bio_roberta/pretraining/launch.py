"""What `bio-roberta pretrain` and `bio-roberta distill` share: compose the fairseq-hydra-train
config, plan the micro-batch (bio_roberta/pretraining/batch_plan.py), start the run.

1. compose the job config (`python -m user_dir.distributed_launch fairseq-hydra-train ... --cfg
   job`, the overrides included); not on CPU with the recipe's own batch (tiny): there is nothing
   to plan, and composing only to read the batch back would cost two more starts of fairseq;
2. plan the per-process micro-batch and update_freq = effective batch / (micro-batch x world);
3. start fairseq-hydra-train in this process' place, under torchrun when the world (processes per
   node x nodes) is above 1. `--dry-run` prints the plan and that command line instead; it needs
   no data-bin (without one, the micro-batch is the configured one, not fitted to the GPU).

The options default to the environment variables the launch scripts have always read (GPUS,
PROCS, NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, MICRO_BATCH, CHECKPOINT_ACTIVATIONS,
EFFECTIVE_BATCH), so `GPUS=8 scripts/pretrain.sh ...` and SLURM job scripts keep working.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path

from bio_roberta.errors import UsageError
from bio_roberta_core.output_dir import hold_until_exit
from bio_roberta_core.processes import owner_environment

# pretrain/ and distill/, package data beside this module (a checkout's configs/ links here)
CONFIGS = Path(__file__).resolve().parents[1] / "configs"
BASE_RECIPE = "base"  # the config as it is, no +recipe
TINY_RECIPES = ("tiny", "modernbert_tiny")  # keep their own batch and update_freq


# The launch options scripts/pretrain.sh documented as environment variables, each defaulting to
# its variable: (option, variable, metavar, type, default without the variable, help).
ENVIRONMENT_OPTIONS = (
    (
        "--gpus",
        "GPUS",
        "N",
        int,
        None,
        "GPUs per node; 0 trains on CPU (default: $GPUS, else the GPUs torch sees)",
    ),
    (
        "--procs",
        "PROCS",
        "N",
        int,
        None,
        (
            "processes per node; --gpus 0 --procs 2 is two gloo ranks on CPU (default: $PROCS, "
            "else one per GPU, or 1 on CPU)"
        ),
    ),
    (
        "--nnodes",
        "NNODES",
        "N",
        int,
        "1",
        "nodes taking part, each running this command (default: $NNODES, else 1)",
    ),
    (
        "--node-rank",
        "NODE_RANK",
        "N",
        int,
        "0",
        "this node's rank among them (default: $NODE_RANK, else 0)",
    ),
    (
        "--master-addr",
        "MASTER_ADDR",
        "HOST",
        str,
        "localhost",
        "host of node 0 for torchrun's rendezvous (default: $MASTER_ADDR, else localhost)",
    ),
    (
        "--master-port",
        "MASTER_PORT",
        "PORT",
        int,
        "29500",
        "its port (default: $MASTER_PORT, else 29500)",
    ),
    (
        "--effective-batch",
        "EFFECTIVE_BATCH",
        "N",
        int,
        None,
        (
            "sequences per update = micro-batch x update_freq x world size; the tiny recipes "
            "keep their own update_freq (default: $EFFECTIVE_BATCH, else the recipe's: its "
            "batch_size x update_freq x 8 GPUs, 8192 for the paper's, 4608 for modernbert)"
        ),
    ),
    (
        "--micro-batch",
        "MICRO_BATCH",
        "N",
        int,
        None,
        (
            "fix the per-process micro-batch, as dataset.batch_size=N does (default: $MICRO_BATCH; "
            "else on GPUs the largest that fits the card, on CPU the configured one)"
        ),
    ),
)


def plugin_dir() -> str:
    """The path to give fairseq as its user dir: the installed plugin package, found without
    importing it (and fairseq with it)."""
    return os.path.abspath(importlib.util.find_spec("user_dir").submodule_search_locations[0])


def recipes(config_dir: Path) -> list[str]:
    """The recipes of a config dir: the config itself and each recipe/NAME.yaml."""
    return [BASE_RECIPE, *sorted(path.stem for path in (config_dir / "recipe").glob("*.yaml"))]


def add_launch_arguments(parser, config_dir: Path, config_dir_variable: str | None = None):
    """The overrides (after the command's positionals) and the options of a launch whose configs
    are in `config_dir` (by default; `config_dir_variable` names an environment variable that
    replaces it)."""
    overrides = parser.add_argument(
        "overrides",
        nargs="+",
        default=[],
        metavar="OVERRIDE",
        help="Hydra overrides of the config (key=value), none or more",
    )
    # "+" rather than "*": argparse then still takes the overrides after an option that follows
    # the positionals (DATA SAVE --recipe tiny key=value)
    overrides.required = False
    parser.add_argument(
        "--recipe",
        metavar="NAME",
        default=BASE_RECIPE,
        help=f"the config itself or one of its recipes: {', '.join(recipes(config_dir))} "
        f"(default: {BASE_RECIPE})",
    )
    environment_dir = os.environ.get(config_dir_variable) if config_dir_variable else None
    parser.add_argument(
        "--config-dir",
        metavar="DIR",
        type=lambda path: Path(path).resolve(),
        default=environment_dir or config_dir,
        help="the configs: base.yaml and recipe/ (default: "
        + (f"${config_dir_variable}, else " if config_dir_variable else "")
        + f"{config_dir})",
    )
    for flag, variable, metavar, kind, fallback, help_text in ENVIRONMENT_OPTIONS:
        parser.add_argument(
            flag,
            metavar=metavar,
            type=kind,
            default=os.environ.get(variable, fallback),
            help=help_text,
        )
    parser.add_argument(
        "--checkpoint-activations",
        action="store_true",
        default=os.environ.get("CHECKPOINT_ACTIVATIONS") == "1",
        help="recompute each layer's activations in the backward: less memory, so a larger "
        "micro-batch fits, for about a third more compute per update (default: on when "
        "$CHECKPOINT_ACTIVATIONS is 1)",
    )
    parser.add_argument(
        "--gpu-memory-gb",
        metavar="GB",
        type=float,
        help="plan for GPUs of this memory (default: the first GPU's), e.g. to see the plan for "
        "another machine with --dry-run",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan and the command line, and start nothing",
    )


def recipe_overrides(config_dir: Path, recipe: str) -> list[str]:
    """The Hydra override that chooses `recipe` of config_dir."""
    if recipe == BASE_RECIPE:
        return []
    if not (config_dir / "recipe" / f"{recipe}.yaml").is_file():
        raise UsageError(
            f"no recipe {recipe!r} in {config_dir / 'recipe'}; choose one of "
            f"{', '.join(recipes(config_dir))}"
        )
    return [f"+recipe={recipe}"]


def composed_job(command: list[str], config_dir: Path) -> dict:
    """The job config `command` (fairseq-hydra-train ... --cfg job) prints; when it does not
    compose, Hydra's own message (fairseq's start-up talk is not shown otherwise)."""
    from omegaconf import OmegaConf

    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise UsageError(
            f"the config in {config_dir} does not compose with these overrides (Hydra's message "
            "above)"
        )
    return OmegaConf.to_container(OmegaConf.create(done.stdout))


def gpu_memory_bytes(gpu_memory_gb: float | None) -> float | None:
    """The memory to plan for: as given, else the first GPU's (None without one)."""
    if gpu_memory_gb is not None:
        return gpu_memory_gb * 2**30
    import torch

    return torch.cuda.get_device_properties(0).total_memory if torch.cuda.is_available() else None


def processes(args) -> tuple[int, int]:
    """(GPUs, processes) per node."""
    gpus = args.gpus
    if gpus is None:
        import torch

        gpus = torch.cuda.device_count()
    procs = args.procs if args.procs is not None else max(gpus, 1)
    if gpus < 0 or procs < 1 or args.nnodes < 1:
        raise UsageError("--gpus must be 0 or more, --procs and --nnodes 1 or more")
    return gpus, procs


def planned_batch(args, compose: list[str], gpus: int, world: int, fixed: bool) -> tuple:
    """(the plan in words, the overrides that set it) for the config `compose` prints."""
    tiny = args.recipe in TINY_RECIPES
    if gpus == 0 and tiny:
        return f"world size {world} x the recipe's own batch and update_freq (CPU)", []
    from bio_roberta.pretraining.batch_plan import configured_batch, dictionary_file, plan

    job = composed_job(compose, args.config_dir)
    effective_batch = 0 if tiny else args.effective_batch or configured_batch(job)
    gpu_bytes = gpu_memory_bytes(args.gpu_memory_gb) if gpus else 0
    # fitting the micro-batch to the GPU needs the vocabulary's size, from the data-bin's
    # dict.txt: a dry run without a data-bin keeps the configured micro-batch and says so
    unsized = args.dry_run and not dictionary_file(args.data).is_file()
    micro_batch, update_freq, why = plan(job, world, effective_batch, gpu_bytes, fixed or unsized)
    if unsized and gpu_bytes and not fixed:
        why = (
            f"configured, not fitted to the GPU: no {dictionary_file(args.data)} to size the "
            "vocabulary (a dry run without a data-bin; the run fits it)"
        )
    words = (
        f"world size {world} x batch {micro_batch} x update_freq {update_freq} = "
        f"{world * micro_batch * update_freq} sequences per update (micro-batch: {why})"
    )
    return words, [f"dataset.batch_size={micro_batch}", f"optimization.update_freq=[{update_freq}]"]


def under_torchrun(args, procs: int, command: list[str]) -> list[str]:
    """`command` (python -m ...) started by torchrun on this node, procs processes."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",  # torchrun
        *("--nnodes", str(args.nnodes), "--node_rank", str(args.node_rank)),
        *("--nproc_per_node", str(procs)),
        *("--master_addr", args.master_addr, "--master_port", str(args.master_port)),
        *command[1:],
    ]


# The option that names the weights a continued pretraining starts from (the recipes that continue
# a model require it: user_dir/checkpointing.py)
FINETUNE_FROM = "checkpoint.finetune_from_model="


def overridden(overrides: list[str], key: str) -> bool:
    """Whether an override sets `key` (key=, +key=, ++key=, ~key)."""
    return any(override.lstrip("+~").split("=", 1)[0] == key for override in overrides)


def continued_shape(overrides: list[str]) -> tuple[list[str], str]:
    """(overrides, what they say) that give a continued pretraining the shape of the checkpoint it
    starts from (checkpoint.finetune_from_model): its architecture and the widths, depth and
    heads its weights have, and for a model with learned positions (RoBERTa, BERT) its positions,
    which are also the block length (task.tokens_per_sample); a key the user overrides is left to
    them. Nothing for a model with rotary positions (ModernBERT: its recipes set its context) or
    without the option."""
    from bio_roberta_core.architecture_fields import FLAG_FIELDS, SHAPE_FIELDS
    from bio_roberta_core.checkpoints import model_option, read_checkpoint

    given = [o.split("=", 1)[1] for o in overrides if o.lstrip("+").startswith(FINETUNE_FROM)]
    if not given or not Path(given[-1]).is_file():
        return [], ""  # none, or a marker / missing file that the run refuses in one line
    state = read_checkpoint(given[-1], mmap=True)
    if not any(name.endswith("embed_positions.weight") for name in state.get("model") or {}):
        return [], ""
    field = model_option(state)
    values = {"_name": field("_name") or field("arch")}
    values.update((name, field(name)) for name in SHAPE_FIELDS + FLAG_FIELDS + ("max_positions",))
    shape = [
        f"++model.{name}={str(value).lower() if isinstance(value, bool) else value}"
        for name, value in values.items()
        if value is not None and not overridden(overrides, f"model.{name}")
    ]
    positions = values["max_positions"]
    if positions is not None and not overridden(overrides, "task.tokens_per_sample"):
        shape.append(f"++task.tokens_per_sample={positions}")
    said = ", ".join(
        f"{name} {value}" for name, value in values.items() if value not in (None, "", False)
    )
    return shape, f"continuing {given[-1]}: its shape ({said}) taken from it"


def launch(args, command_overrides: tuple[str, ...] = ()) -> int:
    """Compose, plan and start (or, with --dry-run, print) the run `args` describe;
    command_overrides come before the user's overrides (distill's teacher and student)."""
    if importlib.util.find_spec("fairseq") is None:  # said as the CLI says it, before any start
        raise ModuleNotFoundError("No module named 'fairseq'", name="fairseq")
    if not (args.config_dir / "base.yaml").is_file():
        raise UsageError(
            f"{args.config_dir}: no base.yaml; --config-dir takes a dir holding base.yaml and "
            "recipe/ (without it: the package's own configs)"
        )
    gpus, procs = processes(args)
    world = procs * args.nnodes
    overrides = [*command_overrides, *args.overrides]
    if args.micro_batch:
        overrides.append(f"dataset.batch_size={args.micro_batch}")
    fixed = any(override.startswith("dataset.batch_size=") for override in overrides)
    if args.checkpoint_activations:
        overrides.append("+model.checkpoint_activations=true")
    hydra = [
        sys.executable,
        "-m",
        "user_dir.distributed_launch",
        "fairseq-hydra-train",
        *("--config-dir", str(args.config_dir), "--config-name", "base"),
        *recipe_overrides(args.config_dir, args.recipe),
        f"task.data={args.data}",
    ]
    plugin = f"common.user_dir={plugin_dir()}"
    compose = [*hydra, plugin, *overrides, "--cfg", "job"]
    plan_line, batch = planned_batch(args, compose, gpus, world, fixed)
    command = [*hydra, f"checkpoint.save_dir={args.save}", plugin, *batch, *overrides]
    if world > 1:
        command = under_torchrun(args, procs, command)
    if args.dry_run:
        print(plan_line, shlex.join(command), sep="\n")
        return 0
    # one run per save dir, held by the run this process becomes (taken last: a launch refused
    # before holds nothing); by node 0 only, whose rank 0 writes the checkpoints
    if args.node_rank == 0:
        hold_until_exit(args.save)
    print(plan_line, shlex.join(command), sep="\n", file=sys.stderr, flush=True)
    # the run is the owner of what it starts (torchrun's processes end with it: processes.py)
    os.execve(command[0], command, owner_environment())
