"""Data files of replica-hciz, installed as the package ``replica_hciz_data``.

In the repository they stay in ``data/`` (``pyproject.toml`` maps this directory to the package
``replica_hciz_data`` with ``package-dir``), so a clone, an editable install and a wheel read the
same files through :mod:`importlib.resources`:

* ``reference/`` -- published numbers to compare against (index: ``reference/README.md``),
  read by :mod:`replica.workflow.reference`, ``replica-figures`` and the tutorial;
* ``rectangular_table_*.npz`` -- tables of the rectangular HCIZ channel (:mod:`hciz.rectangular`);
* ``*_reference.json`` -- high-precision values used by the tests.

The code finds this directory with :func:`hciz.package_data.data_dir`.
"""
