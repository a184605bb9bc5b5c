"""Benchmarks: ``bench/<area>.py`` each with ``main(argv) -> int``; run with ``duel bench <area>|all``.

Every figure is printed as ``bench <area>.<what> ours=<n>/s ref=<library> <n>/s ratio=<ours/ref>``,
medians of at least five runs, the reference measured in the same run (see ``bench/common.py``).
"""

import duelmahjong  # noqa: F401  (first: it turns gRPC's fork support off before anything loads grpc)
