"""Build of the C core (the hot loops); everything else is in pyproject.toml."""
import numpy as np
from setuptools import Extension, setup

COMMON = dict(include_dirs=[np.get_include()], extra_compile_args=["-std=c11", "-O3"],
              define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])

setup(ext_modules=[
    Extension("cntkio._native._ctf", ["src/cntkio/_native/ctf.c"],
              depends=["src/cntkio/_native/ctf_core.h", "src/cntkio/_native/ctf_number.h"], **COMMON),
    Extension("cntkio._native._rand", ["src/cntkio/_native/rand.c"],
              depends=["src/cntkio/_native/rand_core.h"], **COMMON),
    Extension("cntkio._native._uci", ["src/cntkio/_native/uci.c"],
              depends=["src/cntkio/_native/ctf_number.h", "src/cntkio/_native/uci_core.h"], **COMMON),
    Extension("cntkio._native._cbf", ["src/cntkio/_native/cbf.c"],
              depends=["src/cntkio/_native/cbf_core.h"], **COMMON),
    Extension("cntkio._native._htk", ["src/cntkio/_native/htk.c"],
              depends=["src/cntkio/_native/htk_core.h"], **COMMON),
    Extension("cntkio._native._tok", ["src/cntkio/_native/tok.c"],
              depends=["src/cntkio/_native/tok_core.h"], **COMMON),
    Extension("cntkio._native._gather", ["src/cntkio/_native/gather.c"], **COMMON),
])
