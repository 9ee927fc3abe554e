"""Read serialised protobuf messages without the protobuf package: a SentencePiece model
(bio_roberta/hf/tokenizer.py) and TensorBoard's event records
(bio_roberta/report/tensorboard_curves.py)."""

from __future__ import annotations


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, position


def protobuf_fields(data: bytes) -> dict[int, list]:
    """Field number -> values (ints for varints, bytes otherwise) of a serialised protobuf message:
    what the readers of this module need."""
    fields: dict[int, list] = {}
    position = 0
    while position < len(data):
        key, position = read_varint(data, position)
        wire_type = key & 7
        if wire_type == 0:
            value, position = read_varint(data, position)
        else:
            if wire_type == 2:
                size, position = read_varint(data, position)
            else:
                size = {1: 8, 5: 4}[wire_type]
            value, position = data[position : position + size], position + size
        fields.setdefault(key >> 3, []).append(value)
    return fields
