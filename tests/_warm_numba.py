"""Fill the numba caches of the compiled kernels before the test workers start (tests/conftest.py).

A fresh clone compiles the kernels next to the sources at their first call: about 100 s of CPU for the deep
map (:mod:`replica.models._deep_kernels`, the front rules) and 80 s for the two-layer profile solver. Two
pytest-xdist workers that both reach them first compile both, each; compiled once here, each family in its own
process, the workers load them from the cache. Run as ``python tests/_warm_numba.py deep|two_layer``; with warm
caches it takes the time of the imports and one small solve."""

import sys


def deep():
    from replica.branches import sweep
    from replica.models.deep_fronts import DeepFrontModel

    sweep(DeepFrontModel(gammas=(0.5, 0.5, 0.5), activation="tanh2", delta=0.1), [3.0], progress=False)


def two_layer():
    from replica.branches import sweep
    from replica.models.two_layer import TwoLayerModel

    sweep(TwoLayerModel("tanh2", (0.5, 0.5), 0.1), [3.0], progress=False)


FAMILIES = {"deep": deep, "two_layer": two_layer}

if __name__ == "__main__":
    FAMILIES[sys.argv[1]]()
