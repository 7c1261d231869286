"""Build and store the rectangular-channel tables (``data/rectangular_table_*.npz``).

Usage::

    python scripts/make_rectangular_reference.py --ratios 2:0.2 5:2 2:1,1 [--resolution 16]

``R1:R2`` is a product of two Gaussian factors; ``R1:N1,N2,…`` a product of three or more with
inner ratios ``N_i/M`` (``2:1,1`` is ``W₃:₁`` of ``replica-sweep --layers 3 --gamma 0.5``).

Each table costs 10–30 s of direct evaluations (see ``hciz.rectangular``); the stored
files are loaded by ``RectangularChannel`` when (R1, R2, resolution, format) match.
"""

from __future__ import annotations

import argparse
import logging
import sys

from hciz.rectangular import RectangularChannel


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--ratios",
        nargs="+",
        default=["2:0.2", "5:2"],
        help="aspect ratios R1:R2 with R1 = P/M >= 1 and R2 = N/M > 0, or R1:N1,N2,... for products "
             "of three or more factors (default: 2:0.2 5:2)",
    )
    parser.add_argument(
        "--resolution", type=int, default=16, help="Chebyshev order per panel (default 16)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        pairs = []
        for item in args.ratios:
            r1, inner = item.split(":")
            values = [float(v) for v in inner.split(",")]
            pairs.append((float(r1), values[0] if len(values) == 1 else tuple(values)))
    except ValueError:
        parser.error("ratios must look like R1:R2 or R1:N1,N2, e.g. 2:0.2 or 2:1,1")
    for r1, r2 in pairs:
        channel = RectangularChannel(r1, r2, resolution=args.resolution, use_disk_cache=False)
        path = channel.save_tables()
        logging.info("wrote %s (transitions at lambda = %s)", path, channel.transitions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
