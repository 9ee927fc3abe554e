"""Tagging schemes for sequence labelling, in one place (a task's label symbols in its scheme:
bio_roberta/tasks/kinds.py).

Schemes: BIO (IOB2: B- begins an entity, I- continues it), IO (I- only: adjacent entities of one
type merge, which is what IO cannot express), BIOUL (B- begin, I- inside, L- last, U- unit-length).
Tags may be typed (``B-problem``) or untyped (``B``, as in the BioBERT NER files).

Spans are read with the chunk rules of conlleval, as seqeval's default (non-strict) mode applies
them, with L- read as E- and U- as S-. One reader therefore serves every scheme and decodes
ill-formed model output the standard way (an I- after O starts an entity), and converting
through spans keeps the entities that conlleval and seqeval see.
"""

from __future__ import annotations

from typing import Iterable, Sequence

BIO = "BIO"
IO = "IO"
BIOUL = "BIOUL"
SCHEMES = (BIO, IO, BIOUL)
OUTSIDE = "O"

# A span is (entity type, first word, last word), ends inclusive as in seqeval; untyped tags
# have the type "".
Span = tuple[str, int, int]

# The chunk rules below are written for the IOBES letters.
_SCHEME_LETTER = {"B": "B", "I": "I", "L": "E", "U": "S", "E": "E", "S": "S"}


def check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown tagging scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    return scheme


def split_tag(tag: str) -> tuple[str, str]:
    """(letter, entity type) of a tag: 'B-problem' -> ('B', 'problem'), 'I' -> ('I', '')."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    letter = _SCHEME_LETTER.get(tag[:1])
    if letter is None or (len(tag) > 1 and tag[1] != "-"):
        raise ValueError(f"not a B/I/L/U/E/S/O tag: {tag!r}")
    return letter, tag[2:]


def _ends_chunk(prev_letter: str, letter: str, prev_type: str, type_: str) -> bool:
    if prev_letter in ("E", "S"):
        return True
    if prev_letter in ("B", "I") and letter in ("B", "S", OUTSIDE):
        return True
    return prev_letter != OUTSIDE and prev_type != type_


def _starts_chunk(prev_letter: str, letter: str, prev_type: str, type_: str) -> bool:
    if letter in ("B", "S"):
        return True
    if prev_letter in ("E", "S", OUTSIDE) and letter in ("E", "I"):
        return True
    return letter != OUTSIDE and prev_type != type_


def tag_spans(tags: Sequence[str]) -> list[Span]:
    """Entity spans of one sentence's tags in any scheme (conlleval / seqeval default rules)."""
    spans: list[Span] = []
    prev_letter, prev_type, begin = OUTSIDE, "", 0
    for i, tag in enumerate(list(tags) + [OUTSIDE]):
        letter, type_ = split_tag(tag)
        if _ends_chunk(prev_letter, letter, prev_type, type_):
            spans.append((prev_type, begin, i - 1))
        if _starts_chunk(prev_letter, letter, prev_type, type_):
            begin = i
        prev_letter, prev_type = letter, type_
    return spans


def _tag(letter: str, type_: str) -> str:
    return f"{letter}-{type_}" if type_ else letter


def spans_to_tags(spans: Iterable[Span], length: int, scheme: str) -> list[str]:
    """Tags of a sentence of ``length`` words holding non-overlapping ``spans``."""
    check_scheme(scheme)
    tags = [OUTSIDE] * length
    for type_, start, end in spans:
        if not 0 <= start <= end < length:
            raise ValueError(f"span {(type_, start, end)} outside a sentence of {length} words")
        for i in range(start, end + 1):
            tags[i] = _tag("I", type_)
        if scheme == BIO:
            tags[start] = _tag("B", type_)
        elif scheme == BIOUL:
            if start == end:
                tags[start] = _tag("U", type_)
            else:
                tags[start], tags[end] = _tag("B", type_), _tag("L", type_)
    return tags


def convert_tags(tags: Sequence[str], scheme: str) -> list[str]:
    """The same entities written in ``scheme`` (tags may be in any scheme, even ill-formed)."""
    return spans_to_tags(tag_spans(tags), len(tags), scheme)


def entity_types(tags: Iterable[str]) -> tuple[str, ...]:
    """Entity types named by a tag set, in first-seen order ('' for untyped tags)."""
    types: dict[str, None] = {}
    for tag in tags:
        letter, type_ = split_tag(tag)
        if letter != OUTSIDE:
            types.setdefault(type_)
    return tuple(types)


def typed_tags(tags: Iterable[str], entity_type: str) -> tuple[str, ...]:
    """Untyped tags given entity_type ('B' -> 'B-Disease'); O and typed tags are kept."""
    return tuple(
        tag if tag == OUTSIDE or split_tag(tag)[1] else f"{tag}-{entity_type}" for tag in tags
    )


def scheme_tags(types: Sequence[str], scheme: str) -> tuple[str, ...]:
    """Every tag of ``scheme`` over ``types``: O first, then each type's tags."""
    letters = {BIO: "BI", IO: "I", BIOUL: "BILU"}[check_scheme(scheme)]
    return (OUTSIDE,) + tuple(_tag(letter, t) for t in types for letter in letters)


# --- element sets (EBM-PICO) -------------------------------------------------------------------
# A word's tag is O, or the elements it carries joined by PICO_SEPARATOR in PICO_ELEMENTS'
# order ("I-PAR+I-INT" for a participant word inside an intervention span): a set, not a scheme,
# so these tags are never converted between schemes.
PICO_ELEMENTS = ("I-PAR", "I-INT", "I-OUT")
PICO_SEPARATOR = "+"


def pico_elements(tag: str) -> frozenset[str]:
    """The elements of one word's tag: 'O' -> {}, 'I-PAR+I-INT' -> {'I-PAR', 'I-INT'}."""
    if tag == OUTSIDE:
        return frozenset()
    elements = tag.split(PICO_SEPARATOR)
    unknown = [e for e in elements if e not in PICO_ELEMENTS]
    if unknown or len(set(elements)) != len(elements):
        raise ValueError(
            f"not an EBM-PICO tag: {tag!r} (O, or elements of "
            f"{', '.join(PICO_ELEMENTS)} joined by {PICO_SEPARATOR!r})"
        )
    return frozenset(elements)


def pico_tag(elements: Iterable[str]) -> str:
    """The tag of a word carrying these elements (PICO_ELEMENTS order; O when none)."""
    elements = set(elements)
    unknown = elements - set(PICO_ELEMENTS)
    if unknown:
        raise ValueError(f"unknown EBM-PICO elements {sorted(unknown)}")
    return PICO_SEPARATOR.join(e for e in PICO_ELEMENTS if e in elements) or OUTSIDE


def pico_tags() -> tuple[str, ...]:
    """Every element-set tag, O first, then by number of elements (a label dictionary's order)."""
    subsets = [
        [e for k, e in enumerate(PICO_ELEMENTS) if mask >> k & 1]
        for mask in range(2 ** len(PICO_ELEMENTS))
    ]
    order = {element: k for k, element in enumerate(PICO_ELEMENTS)}
    subsets.sort(key=lambda subset: (len(subset), [order[e] for e in subset]))
    return tuple(pico_tag(subset) for subset in subsets)


def blurb_release_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """The single tags BLURB's released EBM-PICO files give these words (its preprocessor, after
    EBM-NLP's build_data.py): of a word's elements the last in P, I, O order, so an outcome wins
    over an intervention and both over a participant. Scoring through these reproduces the gold
    of BLURB's files, which drops the ~3% overlaps; pico_macro_word_f1 keeps them."""
    return tuple(
        next((e for e in reversed(PICO_ELEMENTS) if e in pico_elements(tag)), OUTSIDE)
        for tag in tags
    )
