"""The files TF Serving reads besides the SavedModel: warmup requests, models.config,
batching_parameters.txt.

TF Serving runs the warmup requests before it reports a version available, so
the first client request does not pay for initialization or XLA compiling.
A batch is [B, S]: S takes the values `length_buckets` lists and, with
batching on, TF Serving pads B up to the next of `allowed_batch_sizes`, so the
warmup of an XLA export compiles every shape it will see.

Example:
>>> write_warmup_requests("exports/sentiment/3")
'exports/sentiment/3/assets.extra/tf_serving_warmup_requests'
>>> open("exports/models.config", "w").write(models_config({"sentiment": "/models/sentiment"}))
"""

import json
import os

from keras_bert import storage
from keras_bert.config import check_count
from keras_bert.files import OutputError, check_writable, write_text_atomic

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
#: TF Serving's batcher pads a merged batch up to one of these (the last is
#: max_batch_size). Powers of two: at most 2x padding, few shapes.
ALLOWED_BATCH_SIZES = (1, 2, 4, 8, 16, 32)
#: Both files' header names their writer: only such files are replaced.
_SIGNATURE = "tools/serving_config.py"
#: TF Serving reads at most 1000 warmup records.
MAX_WARMUP_RECORDS = 1000


def length_buckets(max_seq_length, sequence_length=None, pad_to_multiple_of=1):
    """The padded lengths S an export's batches take (all of them, or for
    batch-longest padding a few representative ones)."""
    if sequence_length:
        return [sequence_length]
    if pad_to_multiple_of > 1:
        edges = range(pad_to_multiple_of, max_seq_length + pad_to_multiple_of,
                      pad_to_multiple_of)
        return sorted({min(edge, max_seq_length) for edge in edges})
    # Any length from 2 to max_seq_length: short, medium and the longest.
    return sorted({min(n, max_seq_length) for n in (8, 32, 128)} | {max_seq_length})


def _export_info(export_dir):
    with storage.open_file(storage.join(export_dir, "keras_bert_export.json")) as f:
        return json.load(f)


def _filler_word(vocab_file):
    """A whole-word, lower-case ASCII token of the vocabulary: one WordPiece each."""
    if not storage.exists(vocab_file):
        return "a"
    with storage.open_file(vocab_file) as f:
        for line in f:
            token = line.rstrip("\n")
            if len(token) >= 2 and token.isascii() and token.isalpha() and token.islower():
                return token
    return "a"


def _texts(input_names, length, word):
    """Texts for the inputs of one example whose packing is `length` long.

    [CLS] a [SEP] (b [SEP]): the first input gets one word when there are
    two (a QA question), the last one the rest.
    """
    words = max(length - 1 - len(input_names), len(input_names))
    if len(input_names) == 1:
        return {input_names[0]: " ".join([word] * words)}
    return {input_names[0]: word, input_names[-1]: " ".join([word] * (words - 1))}


def warmup_inputs(export_dir, batch_sizes=ALLOWED_BATCH_SIZES):
    """The inputs of the warmup requests: a list of {input name: list of str}.

    An XLA export (`jit_compile`) gets every (batch size, length bucket) pair;
    another one each bucket at batch 1 and the longest at the largest batch.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    info = _export_info(export_dir)
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString(storage.read_bytes(storage.join(export_dir, "saved_model.pb")))
    signature = proto.meta_graphs[0].signature_def["serving_default"]
    order = {"text": 0, "question": 0, "text_b": 1, "context": 1}
    names = sorted(signature.inputs, key=lambda k: (order.get(k, 2), k))
    word = _filler_word(storage.join(export_dir, "assets", "vocab.txt"))
    buckets = length_buckets(info["max_seq_length"], info.get("sequence_length"),
                             info.get("pad_to_multiple_of", 1))
    if info.get("jit_compile"):
        shapes = [(b, s) for b in batch_sizes for s in buckets]
    else:
        shapes = [(1, s) for s in buckets] + [(max(batch_sizes), buckets[-1])]
    requests = []
    for batch, length in shapes[:MAX_WARMUP_RECORDS]:
        example = _texts(names, length, word)
        requests.append({name: [text] * batch for name, text in example.items()})
    return requests


def write_warmup_requests(export_dir, model_name=None, batch_sizes=ALLOWED_BATCH_SIZES):
    """Writes `assets.extra/tf_serving_warmup_requests` into a version directory.

    Args:
        export_dir: str, a local SavedModel version (with keras_bert_export.json
            and assets/vocab.txt), e.g. exports/sentiment/3.
        model_name: str for the requests' model_spec (default the directory
            above the version; TF Serving ignores it for warmup).
        batch_sizes: the batch sizes the server pads to (batching_parameters).

    Returns:
        str, the path written.
    """
    import tensorflow as tf
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    if storage.is_remote(export_dir):  # Its commit marker lists every file it holds.
        raise ValueError(
            f"{export_dir} is a committed remote export: its files are not changed in place. "
            f"export_model(..., warmup=True) (tools/export.py's default) writes the warmup "
            f"requests into a new version as it is made; export one.")
    name = model_name or os.path.basename(os.path.dirname(os.path.abspath(export_dir)))
    path = os.path.join(export_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for inputs in warmup_inputs(export_dir, batch_sizes):
            request = predict_pb2.PredictRequest(
                model_spec=model_pb2.ModelSpec(name=name, signature_name="serving_default"))
            for key, texts in inputs.items():
                request.inputs[key].CopyFrom(
                    tf.make_tensor_proto([t.encode("utf-8") for t in texts], dtype=tf.string))
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
    return path


def read_warmup_requests(export_dir):
    """The `PredictionLog` protos of an export's warmup file (a list)."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    logs = []
    for record in tf.data.TFRecordDataset(storage.join(export_dir, WARMUP_FILE)):
        log = prediction_log_pb2.PredictionLog()
        log.ParseFromString(record.numpy())
        logs.append(log)
    return logs


def _versions(export_base):
    """The version numbers under `export_base`; on an object store only committed ones
    (a version whose commit was cut short has no valid marker)."""
    from keras_bert.export.predict import version_numbers

    def committed(version):
        path = storage.join(export_base, str(version))
        return not storage.object_store(path) or storage.committed_manifest(path) is not None

    return [v for v in version_numbers(export_base) if committed(v)]


def _quote(text):
    """`text` as a protobuf text-format string literal (quotes, backslashes,
    control characters escaped; other characters kept as UTF-8)."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = "".join(escapes.get(c, c if c.isprintable() or ord(c) > 127
                              else f"\\{ord(c):03o}") for c in text)
    return f'"{out}"'


def models_config(models, serve_versions=2, logging=None):
    """A `ModelServerConfig` (text format, a str) for `--model_config_file`.

    Args:
        models: dict model name -> (base path on the server, list of int
            versions present). The `serve_versions` (>= 1) newest versions are
            served; with two or more, the newest is labelled "canary" and the
            one before "stable", else the one is "stable".
        logging: None, or a dict (sampling_rate, log_prefix, collector) for a
            `logging_config` in each model's config (`request_logging_config`).
    """
    check_count("serve_versions", serve_versions)
    lines = ["# TF Serving --model_config_file (ModelServerConfig, text format), written by",
             "# tools/serving_config.py. TF Serving polls it with",
             "# --model_config_file_poll_wait_seconds; a version it serves is never reloaded,",
             "# export a new version instead. The version labels need",
             "# --allow_version_labels_for_unavailable_models=true at start-up (TF Serving",
             "# otherwise labels only versions that have finished loading).",
             "model_config_list {"]
    for name, (base_path, versions) in models.items():
        served = sorted(versions)[-serve_versions:]
        lines += ["  config {", f"    name: {_quote(name)}", f"    base_path: {_quote(base_path)}",
                  '    model_platform: "tensorflow"']
        if served:
            lines.append("    model_version_policy { specific { "
                         + " ".join(f"versions: {v}" for v in served) + " } }")
            labels = {"stable": served[-2], "canary": served[-1]} if len(served) > 1 else {
                "stable": served[-1]}
            lines += [f'    version_labels {{ key: "{k}" value: {v} }}' for k, v in labels.items()]
        else:
            lines.append("    model_version_policy { latest { num_versions: 1 } }")
        if logging:
            prefix = f"{logging['log_prefix'].rstrip('/')}/{name}"
            lines += ["    logging_config {",
                      f"      log_collector_config {{ type: {_quote(logging['collector'])} "
                      f"filename_prefix: {_quote(prefix)} }}",
                      f"      sampling_config {{ sampling_rate: {logging['sampling_rate']:g} }}",
                      "    }"]
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _check_batching(allowed_batch_sizes, **numbers):
    """Raises ValueError unless every batching number is an int >= 1 and the
    batch sizes increase (TF Serving would start with a useless batcher)."""
    sizes = list(allowed_batch_sizes)
    if (not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes)
            or sizes != sorted(set(sizes))):
        raise ValueError(f"allowed_batch_sizes must be increasing integers >= 1 "
                         f"(--allowed-batch-sizes 1,2,4,8). Received: {sizes}")
    for name, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1 (--{name.replace('_', '-')}). "
                             f"Received: {name}={value!r}")


def batching_parameters(exports_info=(), allowed_batch_sizes=ALLOWED_BATCH_SIZES,
                        batch_timeout_micros=2000, num_batch_threads=4,
                        max_enqueued_batches=64):
    """A `BatchingParameters` (text format, a str) for `--batching_parameters_file`.

    Args:
        exports_info: list of (name, keras_bert_export.json dict) of the
            exports the server holds, whose length buckets the comments list.
        allowed_batch_sizes: increasing ints; the last is max_batch_size.
            The default matches the warmup requests of `write_warmup_requests`.
        batch_timeout_micros: int, how long a request waits for others to
            fill a batch (the latency added at low load).
        num_batch_threads: int, batches run at once (on CPU: cores divided by
            intra-op threads per batch; on one GPU 1-2).
        max_enqueued_batches: int, the queue length before requests are
            refused (UNAVAILABLE) instead of waiting.
    """
    _check_batching(allowed_batch_sizes, batch_timeout_micros=batch_timeout_micros,
                    num_batch_threads=num_batch_threads,
                    max_enqueued_batches=max_enqueued_batches)
    sizes = sorted(allowed_batch_sizes)
    lines = ["# TF Serving --enable_batching --batching_parameters_file "
             "(BatchingParameters, text format),", "# written by tools/serving_config.py.",
             "# A request is a 1-D batch of strings; the batcher concatenates requests and",
             "# pads the merged batch up to the next allowed size (with copies of a row).",
             "# The graph then pads the texts to the batch's length bucket:"]
    for name, info in exports_info:
        buckets = length_buckets(info["max_seq_length"], info.get("sequence_length"),
                                 info.get("pad_to_multiple_of", 1))
        xla = (", XLA" if info.get("jit_compile") else "") + (
            ", int8 (oneDNN's kernels: an x86 TF Serving)" if info.get("quantize") else "")
        if info.get("sequence_length") or info.get("pad_to_multiple_of", 1) > 1:
            lines.append(f"#   {name}: lengths {buckets}{xla}: {len(sizes) * len(buckets)} "
                         f"[batch, length] shapes in all")
        else:
            lines.append(f"#   {name}: its batch's longest text, 2 to {info['max_seq_length']}"
                         f"{xla} (warmed up at lengths {buckets})")
    lines += [f"max_batch_size {{ value: {sizes[-1]} }}",
              f"batch_timeout_micros {{ value: {batch_timeout_micros} }}",
              f"max_enqueued_batches {{ value: {max_enqueued_batches} }}",
              f"num_batch_threads {{ value: {num_batch_threads} }}"]
    lines += [f"allowed_batch_sizes: {size}" for size in sizes]
    # Inputs are 1-D strings: no variable-length dimension to pad.
    lines.append("pad_variable_length_inputs: false")
    return "\n".join(lines) + "\n"


def write_serving_config(export_bases, output_dir, base_path_prefix="/models",
                         serve_versions=2, **batching):
    """Writes models.config and batching_parameters.txt for exports/NAME directories.

    Refused before anything is written: two exports with one folder name,
    batching numbers below 1, an existing file of these names keras_bert did not
    write. Each file is replaced atomically.

    Args:
        export_bases: list of exports/NAME directories (integer versions inside).
        output_dir: str, where the two files go (e.g. exports/).
        base_path_prefix: str, where the server sees the exports
            (/models/NAME, as when exports/ is mounted at /models).
        serve_versions: int, see `models_config`.
        **batching: `batching_parameters` arguments.

    Returns:
        (models.config path, batching_parameters.txt path).
    """
    _check_batching(batching.get("allowed_batch_sizes", ALLOWED_BATCH_SIZES),
                    **{k: v for k, v in batching.items() if k != "allowed_batch_sizes"})
    # The output is refused before the exports are read.
    paths = _check_output(output_dir, ("models.config", "batching_parameters.txt"),
                          "The serving config")
    models, infos = _served_models(export_bases, base_path_prefix)
    return _write_ours(output_dir, paths, (models_config(models, serve_versions),
                                           batching_parameters(infos, **batching)))


def _write_ours(output_dir, paths, texts):
    """Writes each text to its path (checked by `_check_output`) atomically."""
    storage.makedirs(output_dir)
    for path, text in zip(paths, texts):
        write_text_atomic(path, text)
    return tuple(paths)


def _check_output(output_dir, names, flag):
    """The paths of `names` in `output_dir`; refuses a file output and files of
    these names keras_bert did not write."""
    paths = [storage.join(output_dir, name) for name in names]
    check_writable(paths[0], flag=flag)
    if storage.isfile(output_dir):
        raise OutputError(f"The output {output_dir} is a file; give the folder for "
                          f"{' and '.join(names)} (e.g. exports).")
    for path in paths:
        _check_ours(path)
    return paths


def _served_models(export_bases, base_path_prefix):
    """({name: (base path on the server, versions)}, [(name, newest keras_bert_export.json)])
    of exports/NAME directories; refuses two with one name, or one without versions."""
    models, infos, sources = {}, [], {}
    for base in export_bases:
        base = storage.normpath(base)
        name = os.path.basename(storage.abspath(base))
        if name in sources:
            raise ValueError(
                f"{sources[name]} and {base} would both be served as model {name!r} (TF "
                f"Serving names a model by its folder, and one name serves one model): "
                f"rename one of the folders.")
        sources[name] = base
        versions = _versions(base)
        if not versions:
            raise FileNotFoundError(
                f"No version directory in {base}: expected exports/NAME/1/saved_model.pb. "
                f"Pass the exports/NAME directory that tools/export.py wrote.")
        models[name] = (f"{base_path_prefix.rstrip('/')}/{name}", versions)
        infos.append((name, _export_info(storage.join(base, str(versions[-1])))))
    return models, infos


#: Where TF Serving's REST port serves Prometheus metrics (its documented default).
PROMETHEUS_PATH = "/monitoring/prometheus/metrics"


def monitoring_config(path=PROMETHEUS_PATH):
    """A `MonitoringConfig` (text format) for `--monitoring_config_file`: Prometheus
    scrapes the server's metrics at `path` on the REST port (--rest_api_port)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"Expected the Prometheus path to start with '/' (--prometheus-path). "
                         f"Received: {path!r}")
    return "\n".join([
        "# TF Serving --monitoring_config_file (MonitoringConfig, text format), written by",
        "# tools/serving_config.py. Prometheus scrapes http://HOST:REST_PORT" + path,
        "# (the REST port, --rest_api_port, must be open): request counts and latencies per",
        "# model and signature (:tensorflow:serving:request_count, :request_latency, ...),",
        "# model load times, batching queue delays with --enable_batching.",
        "prometheus_config {",
        "  enable: true",
        f"  path: {_quote(path)}",
        "}",
    ]) + "\n"


def request_logging_config(models, serve_versions=2, sampling_rate=0.01, log_prefix="/logs",
                           collector="YOUR_LOG_COLLECTOR"):
    """An example `ModelServerConfig` (text format): `models_config`'s, each model
    logging `sampling_rate` (in (0, 1]) of its requests through `collector` (the name
    a log collector is registered under in the server binary) to `log_prefix`/NAME.
    """
    if (isinstance(sampling_rate, bool) or not isinstance(sampling_rate, (int, float))
            or not 0 < sampling_rate <= 1):
        raise ValueError(f"Expected sampling_rate in (0, 1] (--log-sampling-rate). "
                         f"Received: {sampling_rate!r}")
    head = ["# An EXAMPLE of request logging (ModelServerConfig with a LoggingConfig per",
            "# model), written by tools/serving_config.py. To use it, replace models.config",
            "# with it. Each model logs a sample of its requests and responses",
            f"# (SamplingConfig sampling_rate {sampling_rate:g}) as PredictionLog records through",
            "# the log collector named in log_collector_config.type. The open-source",
            "# tensorflow_model_server's source registers no log collector (only its tests",
            "# do, with REGISTER_LOG_COLLECTOR): a server built with one is needed",
            f"# (replace {collector!r} with its name). Not tried with a server here."]
    body = models_config(models, serve_versions, logging={
        "sampling_rate": sampling_rate, "log_prefix": log_prefix, "collector": collector})
    return "\n".join(head) + "\n" + "".join(
        line + "\n" for line in body.splitlines() if not line.startswith("#"))


def write_operator_files(export_bases, output_dir, base_path_prefix="/models", serve_versions=2,
                         prometheus_path=PROMETHEUS_PATH, **logging):
    """Writes monitoring.config and request_logging.config.example beside models.config
    (arguments: `write_serving_config`'s, `monitoring_config`'s path, and
    `request_logging_config`'s), refusing what `write_serving_config` refuses.

    Returns:
        (monitoring.config path, request_logging.config.example path).
    """
    monitoring_text = monitoring_config(prometheus_path)
    models, _ = _served_models(export_bases, base_path_prefix)
    paths = _check_output(output_dir, ("monitoring.config", "request_logging.config.example"),
                          "The operator files")
    return _write_ours(output_dir, paths, (monitoring_text, request_logging_config(
        models, serve_versions, **logging)))


def _check_ours(path):
    """Raises OutputError if `path` exists and is not a file serving_config wrote
    (its first lines name tools/serving_config.py)."""
    if not storage.lexists(path):
        return
    if storage.isdir(path):
        raise OutputError(f"{path} is a folder; keras_bert's serving files need their "
                          f"names free: choose another --output.")
    with storage.open_file(path, "rb") as f:
        head = f.read(400).decode("utf-8", errors="replace")
    if _SIGNATURE not in head:
        raise OutputError(f"{path} exists and was not written by tools/serving_config.py; "
                          f"keras_bert only replaces what it wrote: choose another --output, "
                          f"or remove it yourself.")
