"""Import fairseq without the scikit-learn and SciPy that no path of ours runs.

Importing fairseq imports every one of its tasks and criteria. Two of them import scikit-learn and
SciPy at module level: the audio_classification task (`sklearn.metrics`) and the
sentence_prediction criterion (`f1_score`, `matthews_corrcoef`; `scipy.stats`' `pearsonr`,
`spearmanr`, which it calls only with its report_* options). Loading them (scipy.stats above all)
took 1.6 s of every fine-tuning run's process on a 2-core CPU, about as long as the rest of
fairseq. Inside ``fairseq_without_scipy()`` those modules are stand-ins: each name taken from them
is a stand-in that imports the real module at its first use (a call, an attribute), so fairseq's
code behaves as before, a little later. After the block ``import sklearn`` is the real one again.
"""

import contextlib
import importlib
import importlib.util
import sys
import types
from typing import Iterator

# the modules fairseq's import takes names from (scikit-learn's and SciPy's packages included)
DEFERRED = ("sklearn", "sklearn.metrics", "scipy", "scipy.stats")


def _resolve(module: str, name: str):
    """The real `module`.`name` (a submodule or an attribute)."""
    try:
        return importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return getattr(importlib.import_module(module), name)


class DeferredName:
    """`module`.`name`, imported at its first call or attribute use."""

    def __init__(self, module: str, name: str):
        self._where = (module, name)

    def _real(self):
        return _resolve(*self._where)

    def __call__(self, *args, **kwargs):
        return self._real()(*args, **kwargs)

    def __getattr__(self, attribute):
        return getattr(self._real(), attribute)

    def __repr__(self):
        return f"<deferred {'.'.join(self._where)}>"


class DeferredModule(types.ModuleType):
    """Stands in for a module in sys.modules during fairseq_without_scipy(): the names taken from
    it are DeferredName; once the block is over, the real module's."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if sys.modules.get(self.__name__) is self:
            return DeferredName(self.__name__, name)
        return _resolve(self.__name__, name)


@contextlib.contextmanager
def fairseq_without_scipy() -> Iterator[None]:
    """During the block, DEFERRED modules not imported yet are stand-ins (import fairseq in it)."""
    standing_in = {
        name: DeferredModule(name)
        for name in DEFERRED
        if name not in sys.modules and importlib.util.find_spec(name.split(".")[0]) is not None
    }
    sys.modules.update(standing_in)
    try:
        yield
    finally:
        for name, module in standing_in.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
