"""Write TF Serving's models.config and batching_parameters.txt for exports.

For each exports/NAME (integer version directories inside, as tools/export.py
writes them), models.config serves the --serve-versions newest versions under
/models/NAME (--base-path-prefix), labelled "canary" (newest) and "stable"
(the one before); TF Serving accepts labels at start-up only with
--allow_version_labels_for_unavailable_models. batching_parameters.txt is for
--enable_batching: batches of up to 32 texts padded to 1, 2, 4, ..., 32 texts
(the sizes an XLA export's warmup requests compile), a 2 ms batch timeout; its
comments list each export's lengths. monitoring.config (--monitoring_config_file)
serves Prometheus metrics on the REST port; request_logging.config.example is
models.config with a sampled request log per model (LoggingConfig), for a
server built with a log collector. See exports/README.md.
A LiteRT export (--format tflite, model.tflite) is refused: TF Serving serves
SavedModels only (run one with tools/predict.py; docs/litert.md).

Examples
--------
  python tools/serving_config.py --model exports/sentiment --model exports/squad --output exports
  docker run -p 8500:8500 -p 8501:8501 -v "$PWD/exports:/models" tensorflow/serving \\
      --model_config_file=/models/models.config --allow_version_labels_for_unavailable_models=true \\
      --enable_batching --batching_parameters_file=/models/batching_parameters.txt \\
      --monitoring_config_file=/models/monitoring.config
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402

# keras_bert.export.tf_serving.ALLOWED_BATCH_SIZES (not imported: --help stays fast).
ALLOWED_BATCH_SIZES = (1, 2, 4, 8, 16, 32)


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--model", action="append", required=True, metavar="EXPORTS/NAME",
                        help="An export base directory (versions inside). Repeat for several.")
    parser.add_argument("--output", default="exports",
                        help="Directory for models.config and batching_parameters.txt "
                        "(default exports/).")
    parser.add_argument("--base-path-prefix", default="/models",
                        help="Where the server sees exports/ (default /models: base_path "
                        "/models/NAME).")
    parser.add_argument("--serve-versions", type=int, default=2,
                        help="Newest versions served per model (default 2).")
    parser.add_argument("--allowed-batch-sizes", default=",".join(map(str, ALLOWED_BATCH_SIZES)),
                        help="Increasing batch sizes; the last is max_batch_size.")
    parser.add_argument("--batch-timeout-micros", type=int, default=2000,
                        help="How long the batcher waits to fill a batch.")
    parser.add_argument("--num-batch-threads", type=int, default=4,
                        help="Batches run at once (CPU: cores / intra-op threads; GPU: 1-2).")
    parser.add_argument("--prometheus-path", default="/monitoring/prometheus/metrics",
                        help="monitoring.config: where Prometheus scrapes the REST port.")
    parser.add_argument("--log-sampling-rate", type=float, default=0.01,
                        help="request_logging.config.example: fraction of requests logged.")
    parser.add_argument("--log-prefix", default="/logs",
                        help="request_logging.config.example: where the log collector "
                        "writes (/logs/NAME...).")
    parser.add_argument("--log-collector", default="YOUR_LOG_COLLECTOR",
                        help="request_logging.config.example: the log collector type your "
                        "server build registers.")
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from keras_bert.export.predict import check_tf_serving_exports
    from keras_bert.export.tf_serving import (
        monitoring_config,
        request_logging_config,
        write_operator_files,
        write_serving_config,
    )
    sizes = [int(s) for s in args.allowed_batch_sizes.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] < 1:
        print(f"error: --allowed-batch-sizes must increase from >= 1. Received: {sizes}",
              file=sys.stderr)
        return 1
    try:
        # TF Serving serves SavedModels: a LiteRT export is refused by name.
        check_tf_serving_exports(args.model)
        # The operator files' settings, checked before any file is written.
        monitoring_config(args.prometheus_path)
        request_logging_config({}, sampling_rate=args.log_sampling_rate)
        paths = write_serving_config(
            args.model, args.output, base_path_prefix=args.base_path_prefix,
            serve_versions=args.serve_versions, allowed_batch_sizes=sizes,
            batch_timeout_micros=args.batch_timeout_micros,
            num_batch_threads=args.num_batch_threads)
        paths += write_operator_files(
            args.model, args.output, base_path_prefix=args.base_path_prefix,
            serve_versions=args.serve_versions, prometheus_path=args.prometheus_path,
            sampling_rate=args.log_sampling_rate, log_prefix=args.log_prefix,
            collector=args.log_collector)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(_cli.run(main))
