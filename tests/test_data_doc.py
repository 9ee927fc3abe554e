"""docs/data.md's table is bio_roberta/report/data_sources.py's output, and that module has a row
for every registry task and a layout for every source format a reader takes: a task added to the
registry without its source, licence and files fails here."""

import re

from bio_roberta.readers import FORMAT_MODULES, READERS
from bio_roberta.report.data_sources import DATA_SOURCES, convert_line, markdown_table
from bio_roberta.tasks.registry import TASKS
from conftest import REPO_ROOT

GENERATED = re.compile(
    r"<!-- generated: python -m bio_roberta.report.data_sources -->\n(.*)<!-- end generated -->",
    re.S,
)


def test_the_page_holds_the_generated_table():
    page = (REPO_ROOT / "docs" / "data.md").read_text(encoding="utf-8")
    (table,) = GENERATED.findall(page)
    assert table == markdown_table(), "regenerate: python -m bio_roberta.report.data_sources"


def test_every_task_and_format_has_its_facts():
    assert list(DATA_SOURCES) == list(TASKS)
    assert set(FORMAT_MODULES) == set(READERS)
    assert all(
        isinstance(module.LAYOUT, str) and module.LAYOUT for module in FORMAT_MODULES.values()
    )
    assert {spec.source_format for spec in TASKS.values()} <= set(FORMAT_MODULES)
    for name, source in DATA_SOURCES.items():
        assert source.source and source.licence and source.data_dir, name


def test_public_rows_are_the_sweeps_public_tasks():
    from bio_roberta.commands._finetune_runs import selected_tasks

    rows = {line.split(" | ")[0].split("`")[1]: line for line in markdown_table().splitlines()[2:]}
    marked = [name for name, row in rows.items() if row.split(" | ")[3] == "yes"]
    assert marked == selected_tasks("public") and "mednli" not in marked
    assert all(f"`{convert_line(name)}`" in rows[name] for name in TASKS)
