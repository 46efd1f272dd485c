#!/usr/bin/env python3
"""Writes the API coverage table (docs/api.md): every function of the CUDA headers' stream and event sections,
driver and runtime, and the host-function launches, with the tests that call each and the catalog IDs they
claim; the functions no test calls are listed as such.

  python3 reports/streamcheck_api.py [--source DIR] [--cuda-include DIR] [-o FILE]

--source: the streamcheck tree (default: this script's); --cuda-include: the toolkit's include folder (default:
$CUDA_PATH/include, $CUDA_HOME/include or /usr/local/cuda/include); -o: the file (default: stdout).
Exit status 2 when the headers cannot be found."""

import argparse
import sys
from pathlib import Path


from streamcheck.api import coverage, cuda_include_dir, markdown  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--cuda-include", type=Path, default=None)
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    include = args.cuda_include or cuda_include_dir()
    if include is None or not (include / "cuda.h").is_file():
        print("streamcheck_api: no CUDA headers (cuda.h) in %s; give --cuda-include"
              % (include or "$CUDA_PATH/include, $CUDA_HOME/include or /usr/local/cuda/include"), file=sys.stderr)
        return 2
    text = markdown(coverage(args.source, include))
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
