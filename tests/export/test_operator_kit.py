"""The operator kit of tools/serving_config.py: monitoring.config and a request-logging example."""

import os

import pytest
from google.protobuf import descriptor_pb2, text_format
from tensorflow_serving.config import model_server_config_pb2

from tests.conftest import run_tool
from tests.export.conftest import proto_message_class, two_versions


def _monitoring_config_class():
    """MonitoringConfig of TF Serving's monitoring_config.proto (tensorflow-serving-api
    does not ship it): prometheus_config { bool enable = 1; string path = 2; }."""
    file = descriptor_pb2.FileDescriptorProto(
        name="keras_bert_test_monitoring.proto", package="tensorflow.serving.test",
        syntax="proto3")
    field = descriptor_pb2.FieldDescriptorProto
    prometheus = file.message_type.add(name="PrometheusConfig")
    prometheus.field.add(name="enable", number=1, type=field.TYPE_BOOL,
                         label=field.LABEL_OPTIONAL)
    prometheus.field.add(name="path", number=2, type=field.TYPE_STRING,
                         label=field.LABEL_OPTIONAL)
    monitoring = file.message_type.add(name="MonitoringConfig")
    monitoring.field.add(name="prometheus_config", number=1, type=field.TYPE_MESSAGE,
                         type_name=".tensorflow.serving.test.PrometheusConfig",
                         label=field.LABEL_OPTIONAL)
    return proto_message_class(file, "tensorflow.serving.test.MonitoringConfig")


def test_serving_config_writes_monitoring_and_request_logging(three_exports, tmp_path):
    sentiment = two_versions(three_exports["classifier"], tmp_path / "exports" / "sentiment")
    out = tmp_path / "serving"
    status, stdout, err = run_tool("serving_config", "--model", sentiment, "--output", out,
                                   "--log-sampling-rate", "0.05", "--log-collector", "tfrecord")
    assert status == 0, err
    assert sorted(os.listdir(out)) == ["batching_parameters.txt", "models.config",
                                       "monitoring.config", "request_logging.config.example"]
    assert f"wrote {out / 'monitoring.config'}" in stdout

    monitoring = text_format.Parse((out / "monitoring.config").read_text(),
                                   _monitoring_config_class()())
    assert monitoring.prometheus_config.enable
    assert monitoring.prometheus_config.path == "/monitoring/prometheus/metrics"

    example = text_format.Parse((out / "request_logging.config.example").read_text(),
                                model_server_config_pb2.ModelServerConfig())
    (config,) = example.model_config_list.config
    # models.config's model, versions and labels, plus the logging.
    served = text_format.Parse((out / "models.config").read_text(),
                               model_server_config_pb2.ModelServerConfig())
    assert not served.model_config_list.config[0].HasField("logging_config")
    config_without_logging = model_server_config_pb2.ModelConfig()
    config_without_logging.CopyFrom(config)
    config_without_logging.ClearField("logging_config")
    assert config_without_logging == served.model_config_list.config[0]
    logging = config.logging_config
    assert logging.sampling_config.sampling_rate == pytest.approx(0.05)
    assert logging.log_collector_config.type == "tfrecord"
    assert logging.log_collector_config.filename_prefix == "/logs/sentiment"

    # Rerun: the files are ours, replaced. A bad rate is refused before anything is written.
    (out / "monitoring.config").write_text("# someone else's\n")
    status, _, err = run_tool("serving_config", "--model", sentiment, "--output", out)
    assert status == 1 and "monitoring.config exists and was not written by" in err
    status, _, err = run_tool("serving_config", "--model", sentiment, "--output",
                              tmp_path / "other", "--log-sampling-rate", "1.5")
    assert status == 1 and "sampling_rate in (0, 1] (--log-sampling-rate)" in err
    assert not os.path.exists(tmp_path / "other")
