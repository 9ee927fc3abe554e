"""One module per ``TaskSpec.source_format``, named after it; each defines
``read(spec, data_dir) -> dict[str, Split]``. bio_roberta.readers.READERS finds them here, so a new
format is a new file."""
