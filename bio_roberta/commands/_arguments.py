"""Options whose default is a field of an options dataclass (AuditOptions, Thresholds,
ShardOptions): declared from the field, so that each default and type is stated once, beside the
code that reads it, and read back into the dataclass."""

import dataclasses


def add_field_options(parser, defaults, helps: dict[str, str]) -> None:
    """An option for each flag of helps with its help (--batch-size: the field batch_size of the
    dataclass instance `defaults`), of the field's type, defaulting to its value."""
    for flag, help in helps.items():
        default = getattr(defaults, flag.removeprefix("--").replace("-", "_"))
        parser.add_argument(flag, type=type(default), default=default, help=help)


def field_values(args, options_class):
    """An options_class of the parsed args' values of its fields (the options add_field_options
    declared), its other fields at their defaults."""
    return options_class(
        **{
            field.name: getattr(args, field.name)
            for field in dataclasses.fields(options_class)
            if hasattr(args, field.name)
        }
    )
