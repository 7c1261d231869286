"""The workflow around the solvers: command lines, configuration, HDF5 I/O, the write protocol, plots,
phase diagrams, spectra and the reference figures."""
