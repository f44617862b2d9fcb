"""What importing the package loads: the faces stay light, imports go one way, and the
top-level names are the faces' objects. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import botorch_mtucb

#: Packages a BoTorch user's ``import botorch_mtucb...`` must never load.
HEAVY = ("matplotlib", "dask", "distributed", "mtucb_bench", "ax")

#: The top-level names and the public face each comes from.
TOP_LEVEL = {
    "botorch_mtucb.models": [
        "practical_multitask_gp", "ExactMultiTaskGP", "NystromMultiTaskGP", "TruncatedGP",
        "AdaptiveTruncationGP",
    ],
    "botorch_mtucb.acquisition": [
        "ScalarizedMultiTaskUCB", "HeavyTailedUCB", "ChebyshevScalarization",
        "LinearScalarization", "sample_scalarization_weights", "predicted_anchors",
    ],
    "botorch_mtucb.loop": ["run_bo_loop", "RefitSchedule"],
    "botorch_mtucb.utils": ["sobol_initial_design"],
}


def _loaded_after(code: str) -> list[str]:
    """The names in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _heavy(modules: list[str]) -> list[str]:
    return sorted({m for m in modules if m.split(".")[0] in HEAVY})


@pytest.mark.parametrize(
    "code",
    [
        "import botorch_mtucb",
        # the README's plain-BoTorch loop
        "import botorch_mtucb.acquisition, botorch_mtucb.models, botorch_mtucb.utils, "
        "botorch_mtucb.loop",
        # every top-level name
        "import botorch_mtucb\n[getattr(botorch_mtucb, n) for n in botorch_mtucb.__all__]",
    ],
    ids=["top-level", "readme-loop", "top-level-names"],
)
def test_imports_load_no_plotting_cluster_harness_or_ax(code):
    assert _heavy(_loaded_after(code)) == []


def test_acquisition_loads_no_model_family_or_loop():
    loaded = _loaded_after("import botorch_mtucb.acquisition")
    families = ("multitask", "heavy_tailed", "models", "loop")
    assert [m for m in loaded if m.split(".")[:2][-1] in families
            and m.startswith("botorch_mtucb.")] == []


def test_top_level_import_loads_no_subpackage():
    loaded = _loaded_after("import botorch_mtucb")
    assert [m for m in loaded if m.startswith("botorch_mtucb.")] == []


@pytest.mark.parametrize("face", sorted(TOP_LEVEL))
def test_top_level_names_are_the_faces_objects(face):
    module = __import__(face, fromlist=["_"])
    for name in TOP_LEVEL[face]:
        assert name in module.__all__ and name in botorch_mtucb.__all__
        assert getattr(botorch_mtucb, name) is getattr(module, name)


def test_top_level_all_is_the_readme_names_and_the_version():
    names = {n for names in TOP_LEVEL.values() for n in names}
    assert set(botorch_mtucb.__all__) == names | {"__version__"}
    assert isinstance(botorch_mtucb.__version__, str)
    with pytest.raises(AttributeError, match="no_such_name"):
        botorch_mtucb.no_such_name  # noqa: B018
