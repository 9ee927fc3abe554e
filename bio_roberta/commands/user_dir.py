"""Print the path to pass as fairseq's --user-dir (the plugin installed with this package)."""

HELP = "print the fairseq --user-dir path of the bio-roberta plugin"


def add_arguments(parser):
    pass


def run(args):
    import os

    import user_dir

    print(os.path.dirname(os.path.abspath(user_dir.__file__)))
    return 0
