"""Tagging schemes: conversions keep the entities conlleval/seqeval see, in every direction."""

import random

import pytest
from seqeval.metrics.sequence_labeling import get_entities

from bio_roberta.tasks.kinds import SCHEME_TAGS, label_symbols
from bio_roberta.tasks.registry import TASKS, get_task
from bio_roberta_core.tagging import (
    BIO,
    BIOUL,
    IO,
    SCHEMES,
    convert_tags,
    entity_types,
    pico_elements,
    scheme_tags,
    spans_to_tags,
    split_tag,
    tag_spans,
)

TYPES = (("",), ("chem", "gene"))


def random_spans(rng, length, types, adjacent_same_type=True):
    spans, i = [], 0
    while i < length:
        if rng.random() < 0.3:
            end = min(length - 1, i + rng.randint(0, 3))
            type_ = rng.choice(types)
            if adjacent_same_type or not spans or spans[-1][2] != i - 1 or spans[-1][0] != type_:
                spans.append((type_, i, end))
            i = end + 1
        else:
            i += 1
    return spans


def random_tags(rng, length, letters, types):
    """Any sequence of tags, ill-formed ones (I- after O, L- without B-) included."""
    return [
        "O"
        if (letter := rng.choice(letters)) == "O"
        else (f"{letter}-{t}" if (t := rng.choice(types)) else letter)
        for _ in range(length)
    ]


def seqeval_spans(tags):
    """seqeval's entities with L/U read as E/S and its '_' type of untyped tags as ''."""
    iobes = [t.replace("L", "E", 1).replace("U", "S", 1) if t[:1] in "LU" else t for t in tags]
    return [
        ("" if type_ == "_" else type_, start, end) for type_, start, end in get_entities(iobes)
    ]


@pytest.mark.parametrize("types", TYPES)
def test_tag_spans_follow_seqeval_on_any_tag_sequence(types):
    rng = random.Random(1)
    for letters in ("BIO", "IO", "BILUO"):
        for _ in range(500):
            tags = random_tags(rng, rng.randint(0, 12), letters, types)
            assert tag_spans(tags) == seqeval_spans(tags), tags


@pytest.mark.parametrize("types", TYPES)
def test_bio_and_bioul_round_trip_exactly(types):
    rng = random.Random(2)
    for _ in range(500):
        length = rng.randint(0, 15)
        bio = spans_to_tags(random_spans(rng, length, types), length, BIO)
        bioul = convert_tags(bio, BIOUL)
        assert not any(t.startswith(("L", "U")) for t in bio)
        assert convert_tags(bioul, BIO) == bio
        assert tag_spans(bioul) == tag_spans(bio)
        assert convert_tags(bioul, BIOUL) == bioul


@pytest.mark.parametrize("types", TYPES)
def test_io_round_trips_when_no_two_entities_of_a_type_touch(types):
    rng = random.Random(3)
    for _ in range(500):
        length = rng.randint(0, 15)
        bio = spans_to_tags(random_spans(rng, length, types, adjacent_same_type=False), length, BIO)
        io = convert_tags(bio, IO)
        assert all(t == "O" or t.startswith("I") for t in io)
        assert convert_tags(io, BIO) == bio


def test_io_merges_touching_entities_of_one_type():
    assert convert_tags(["B", "B", "I", "O"], IO) == ["I", "I", "I", "O"]
    assert tag_spans(convert_tags(["B", "B", "I", "O"], IO)) == [("", 0, 2)]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_ill_formed_tags_convert_to_the_entities_conlleval_reads(scheme):
    rng = random.Random(4)
    for _ in range(500):
        tags = random_tags(rng, rng.randint(0, 12), "BILUO", ("x", "y"))
        converted = convert_tags(tags, scheme)
        assert set(t[0] for t in converted) <= set(scheme) | {"O"}
        if scheme != IO:
            assert tag_spans(converted) == seqeval_spans(tags)


def test_examples():
    assert tag_spans(["O", "I-x", "I-x", "B-x", "I-y"]) == [("x", 1, 2), ("x", 3, 3), ("y", 4, 4)]
    assert convert_tags(["B", "I", "I", "O", "B"], BIOUL) == ["B", "I", "L", "O", "U"]
    assert convert_tags(["O", "I-x", "I-x"], BIO) == ["O", "B-x", "I-x"]
    assert split_tag("B-CLINICAL_DEPT") == ("B", "CLINICAL_DEPT")
    with pytest.raises(ValueError, match="not a B/I/L/U/E/S/O tag"):
        split_tag("X-foo")
    with pytest.raises(ValueError, match="unknown tagging scheme"):
        convert_tags(["O"], "IOB1")
    with pytest.raises(ValueError, match="outside a sentence"):
        spans_to_tags([("x", 2, 4)], 3, BIO)


def test_label_symbols_of_registry_tasks():
    ncbi = get_task("ncbi-disease")
    assert label_symbols(ncbi) == ncbi.labels == ("O", "B", "I")
    assert label_symbols(ncbi, BIOUL) == ("O", "B", "I", "L", "U")
    assert label_symbols(ncbi, IO) == ("O", "I")
    i2b2 = get_task("i2b2-2010")
    assert entity_types(i2b2.labels) == ("problem", "test", "treatment")
    assert label_symbols(i2b2, BIO) == i2b2.labels
    assert len(label_symbols(i2b2, BIOUL)) == 1 + 4 * 3
    assert label_symbols(get_task("chemprot")) == get_task("chemprot").labels
    hoc = label_symbols(get_task("hoc"))
    assert len(hoc) == 10 and all(" " not in s for s in hoc)
    # element sets: every subset of P, I, O, each word's set as one symbol
    pico = label_symbols(get_task("ebm-pico"))
    assert len(pico) == 8 == len({pico_elements(tag) for tag in pico}) and pico[0] == "O"
    assert label_symbols(get_task("biosses")) == ()
    for spec in TASKS.values():
        if spec.task_kind.label_encoding == SCHEME_TAGS:
            assert (
                label_symbols(spec, BIO)
                == spec.labels
                == scheme_tags(entity_types(spec.labels), BIO)
            )
