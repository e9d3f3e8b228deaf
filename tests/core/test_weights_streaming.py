"""Weights files are written streaming: the bytes of safetensors' own serialization, written
tensor by tensor from the tensors' memory, with no copy of the whole file in memory."""
import io
import json

import pytest
import torch
from safetensors.torch import save

import resharpen as rs
from resharpen.experiments.common import io as rio

TENSORS = {"b": torch.randn(3, 5, dtype=torch.float64), "a": torch.randn(7),
           "c": torch.arange(5), "d": torch.zeros(0, 3), "e": torch.ones(3, dtype=torch.bool),
           "f": torch.randn(3, dtype=torch.bfloat16), "g": torch.randn(2, dtype=torch.float16),
           "h": torch.arange(3, dtype=torch.int32), "i": torch.arange(3, dtype=torch.int8),
           "j": torch.arange(3, dtype=torch.uint8), "k": torch.arange(3, dtype=torch.int16)}


def parts(data: bytes) -> tuple[dict, bytes]:
    """(the parsed JSON header, the tensor bytes) of a safetensors file."""
    size = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + size]), data[8 + size:]


@pytest.mark.parametrize("metadata", [{"model_config": '{"vocab": 8}'}, {}, None])
def test_the_bytes_are_safetensors_own(metadata):
    buffer = io.BytesIO()
    rio.write_safetensors(buffer, TENSORS, metadata)
    assert buffer.getvalue() == save(TENSORS, metadata=metadata)


def test_with_several_metadata_keys_header_and_data_are_safetensors_own():
    """safetensors orders several metadata keys as its hash map does (it varies from process
    to process), so the header is compared parsed; the tensor bytes are compared as they are."""
    metadata = {"model_config": '{"vocab": 8}', "weights": "raw", "a": "b"}
    buffer = io.BytesIO()
    rio.write_safetensors(buffer, TENSORS, metadata)
    assert parts(buffer.getvalue()) == parts(save(TENSORS, metadata=metadata))


def test_a_construction_is_saved_without_an_in_memory_file(tmp_path, monkeypatch):
    import safetensors.torch

    def whole_file(*args, **kwargs):
        raise AssertionError("the whole file was serialized in memory")

    monkeypatch.setattr(safetensors.torch, "save", whole_file)
    built = rs.build("tight", vocab=12, norm="attn_out")
    rs.save_construction(built, tmp_path / "c")
    back = rs.load_construction(tmp_path / "c")
    for name, tensor in built.model.state_dict().items():
        assert torch.equal(back.model.state_dict()[name], tensor)


def test_an_unstorable_dtype_is_refused():
    with pytest.raises(ValueError, match=r"tensor 'z' has dtype torch.complex64"):
        rio.write_safetensors(io.BytesIO(), {"z": torch.zeros(2, dtype=torch.complex64)}, {})
