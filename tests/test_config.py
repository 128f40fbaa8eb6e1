import json

import pytest

from keras_bert.config import BertConfig


def test_presets_follow_the_papers():
    base = BertConfig.from_preset("base")
    assert (base.num_layers, base.hidden_size, base.num_heads, base.intermediate_size) == (
        12, 768, 12, 3072)
    large = BertConfig.from_preset("large")
    assert (large.num_layers, large.hidden_size, large.num_heads, large.intermediate_size) == (
        24, 1024, 16, 4096)
    sizes = {name: BertConfig.from_preset(name) for name in ("tiny", "mini", "small", "medium")}
    assert [(c.num_layers, c.hidden_size) for c in sizes.values()] == [
        (2, 128), (4, 256), (4, 512), (8, 512)]
    for c in sizes.values():
        assert c.num_heads == c.hidden_size // 64
        assert c.intermediate_size == 4 * c.hidden_size


def test_preset_overrides_and_unknown_preset():
    assert BertConfig.from_preset("tiny", vocab_size=99).vocab_size == 99
    with pytest.raises(ValueError, match="name='huge'"):
        BertConfig.from_preset("huge")


def test_json_round_trip(tmp_path):
    config = BertConfig.from_preset("mini", vocab_size=1234, hidden_act="gelu_approx")
    path = tmp_path / "config.json"
    config.to_json_file(path)
    assert json.loads(path.read_text())["hidden_act"] == "gelu_approx"
    assert BertConfig.from_json_file(path) == config
    assert BertConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(hidden_size=100, num_heads=12), "hidden_size=100, num_heads=12"),
        (dict(vocab_size=-5), "vocab_size=-5"),
        (dict(hidden_act="swish"), "hidden_act='swish'"),
        (dict(dropout_rate=1.5), "dropout_rate=1.5"),
        (dict(num_layers=2.5), "num_layers=2.5"),
    ],
)
def test_invalid_values_name_field_and_value(overrides, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        BertConfig(**overrides)


def test_unknown_json_field_is_an_error():
    with pytest.raises(ValueError, match="num_hidden_layers"):
        BertConfig.from_dict({"num_hidden_layers": 12})


@pytest.mark.parametrize("rate", [1.0, -0.1, True, "0.1"])
def test_dropout_rates_are_checked_in_config_and_layers(rate):
    from keras_bert.layers import TransformerEncoderBlock

    with pytest.raises(ValueError, match=r"BertConfig\.dropout_rate in \[0, 1\)"):
        BertConfig.from_preset("tiny", vocab_size=100, dropout_rate=rate)
    with pytest.raises(ValueError, match=r"Expected attention_dropout_rate in \[0, 1\)"):
        TransformerEncoderBlock(num_heads=2, intermediate_size=8, attention_dropout_rate=rate)
