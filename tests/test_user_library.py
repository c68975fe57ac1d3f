"""A user's own theorem file, outside the project, goes through every command like the built-in library."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
USER_IDS = ["ols_through_qr", "hat_idempotent", "ols_coefficients_as_attention"]


def run(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "derive", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, preexec_fn=lambda: os.umask(0o022))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A directory outside the project holding the user's file, its certificates and its LaTeX."""
    work = tmp_path_factory.mktemp("user")
    shutil.copy(DATA / "user_theorems.py", work / "my_theorems.py")
    result = run(work, "prove", "--library", "my_theorems.py", "--certificates", "certs")
    assert result.returncode == 0, result.stdout + result.stderr
    return work


def test_prove_loads_the_users_theorems(workdir):
    result = run(workdir, "prove", "--library", "my_theorems.py", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == USER_IDS  # by default the library's own theorems
    assert all(r["status"] == "verified" for r in rows)
    listing = run(workdir, "list", "--library", "my_theorems.py").stdout.split()
    assert "orthogonal_inverse" in listing and "ols_through_qr" in listing


def test_the_witness_samples_the_users_theorems_from_their_hypotheses(workdir):
    result = run(workdir, "prove", "--library", "my_theorems.py", "--witness", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(result.stdout)
    assert all(r["status"] == "verified" and r["witness"]["instances"] > 0 for r in rows)
    # progress on stderr, one line per theorem as it starts and one as its witness is done (the JSON comes only at
    # the end)
    lines = result.stderr.strip().splitlines()
    starting, progress = lines[0::2], lines[1::2]
    expected = [f"[{i}/3] {tid}" for i, tid in enumerate(USER_IDS, 1)]
    assert [line.split(":")[1].strip() for line in starting] == expected
    assert all(line.endswith(": proving and witnessing ...") for line in starting)
    assert [line.split(":")[1].strip() for line in progress] == expected
    assert all(f"witness: {r['witness']['instances']} instances, identities p = 1, 2" in line
               for r, line in zip(rows, progress, strict=True))
    (workdir / "unsampleable.py").write_text(
        "from sympy import MatrixSymbol, Q\n"
        "from derive import Hypothesis, ProofBuilder, dim, mul, predicate, theorem, transpose\n"
        "n, p = dim('n'), dim('p')\n"
        "X, S = MatrixSymbol('X', n, p), MatrixSymbol('S', p, p)\n\n\n"
        "@theorem\n"
        "def gram_is_s():\n"
        "    hypotheses = [Hypothesis('gram', mul(transpose(X), X), S), predicate('S_symmetric', Q.symmetric, S)]\n"
        "    b = ProofBuilder('gram_is_s', 'Gram', '', hypotheses)\n"
        "    b.main(mul(transpose(X), X)).rw('hyp:gram').qed(S)\n"
        "    return b.proof()\n")
    result = run(workdir, "prove", "--library", "unsampleable.py", "--witness")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (starting, progress, line) = result.stderr.strip().splitlines()
    assert starting == "derive: [1/1] gram_is_s: proving and witnessing ..."  # named before the wait
    assert progress.startswith("derive: [1/1] gram_is_s: FAILED: ") and "cannot sample hypothesis gram" in progress
    assert "the witness cannot check the proof" in line and "cannot sample hypothesis gram" in line


def test_certificates_check_without_the_library_and_keep_the_umask(workdir):
    files = sorted((workdir / "certs").glob("*.json"))
    assert [f.stem for f in files] == sorted(USER_IDS)
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o644 for f in files)
    result = run(workdir, "check", *map(str, files))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verified theorem ols_coefficients_as_attention (2 steps; cites spectral_precision)" in result.stdout
    assert "proves  HH = H" in result.stdout  # the statement it verified, in the package's notation (issue 44)


def test_an_altered_user_certificate_is_rejected(workdir, tmp_path):
    data = json.loads((workdir / "certs" / "hat_idempotent.json").read_text())
    data["claim"]["rhs"] = data["claim"]["lhs"]  # H H = H H, but the chain ends at H
    data.pop("sha256")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = run(workdir, "check", str(bad))
    assert result.returncode == 1 and "REJECTED" in result.stdout and "Traceback" not in result.stderr
    data = json.loads((workdir / "certs" / "ols_coefficients_as_attention.json").read_text())
    data["dependencies"][0]["steps"][0]["rule"] = "inverse_inverse"  # a dependency's proof broken
    bad.write_text(json.dumps(data))
    result = run(workdir, "check", str(bad))
    assert result.returncode == 1 and "dependencies[0]" in result.stdout
    expect = run(workdir, "check", "--expect", "ols_is_linear_attention", str(workdir / "certs/hat_idempotent.json"))
    assert expect.returncode == 1 and "not 'ols_is_linear_attention'" in expect.stdout


def test_latex_of_a_user_theorem(workdir):
    result = run(workdir, "latex", "--library", "my_theorems.py", "ols_coefficients_as_attention", "--out", "tex")
    assert result.returncode == 0, result.stderr
    fragment = (workdir / "tex" / "ols_coefficients_as_attention.tex").read_text()
    assert "\\begin{theorem}" in fragment and "thm:spectral_precision" in fragment
    article = (workdir / "tex" / "ols_transformer.tex").read_text()
    assert "\\label{thm:spectral_precision}" in article  # the cited theorem is stated in the article


def test_a_user_proof_that_does_not_check_names_theorem_chain_step_and_rule(tmp_path):
    text = (DATA / "user_theorems.py").read_text().replace(
        '.rw("transpose_product").rw("hyp:Q_orthonormal_columns")',
        '.rw("transpose_product").to(mul(transpose(R), transpose(Qf), Qf, R), "transpose_transpose")'
        '.rw("hyp:Q_orthonormal_columns")')
    assert "transpose_transpose" in text
    (tmp_path / "broken.py").write_text(text)
    result = run(tmp_path, "prove", "--library", "broken.py", "ols_through_qr")
    assert result.returncode == 1
    assert "ols_through_qr/gram step 4 (rule transpose_transpose)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such file"),
    ("import no_such_package_anywhere\n", "ModuleNotFoundError"),
    ("def f(:\n", "syntax error at line 1"),
    ("x = 1\n", "registers no theorem"),
])
def test_a_library_that_cannot_be_loaded_is_a_usage_error(tmp_path, content, message):
    if content is not None:
        (tmp_path / "lib.py").write_text(content)
    result = run(tmp_path, "prove", "--library", "lib.py")
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_dotted_module_and_an_entry_point(tmp_path):
    package = tmp_path / "site"
    package.mkdir()
    shutil.copy(DATA / "user_theorems.py", package / "users_theorems_mod.py")
    env = {"PYTHONPATH": str(package)}
    result = run(tmp_path, "prove", "--library", "users_theorems_mod", "hat_idempotent", env=env)
    assert result.returncode == 0, result.stderr
    dist = package / "users_theorems-1.0.dist-info"  # an installed distribution registering the module
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: users-theorems\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ols_transformer.theorems]\nmine = users_theorems_mod\n")
    listing = run(tmp_path, "list", env=env)
    assert listing.returncode == 0, listing.stderr
    assert "hat_idempotent" in listing.stdout.split()


ROUTE_FILE = '''
from sympy import Identity, MatrixSymbol, Q

from derive import Hypothesis, ProofBuilder, dim, inv, mul, predicate, theorem, transpose
from derive.routes import Route

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
Qf, R = MatrixSymbol("Q", n, p), MatrixSymbol("R", p, p)


@theorem(routes=[Route("NAME", "main", {"X_q": "X_query", "Q": "Q", "R": "R", "Y": "Y"}, upper=("R",))])
def qr_predictions():
    b = ProofBuilder("qr_predictions", "OLS through QR", "X = QR, QᵀQ = I, R invertible.",
                     [Hypothesis("qr", X, mul(Qf, R)), Hypothesis("Q_cols", mul(transpose(Qf), Qf), Identity(p)),
                      predicate("R_invertible", Q.invertible, R)])
    b.main(mul(X_q, inv(mul(transpose(X), X)), transpose(X), Y)).auto(mul(X_q, inv(R), transpose(Qf), Y))
    return b.proof()
'''


SCALAR_ROUTE_FILE = '''
from sympy import Identity, MatrixSymbol

from derive import ProofBuilder, add, dim, inv, mul, scalar, theorem, transpose
from derive.routes import Route

n, p, k, m = dim("n"), dim("p"), dim("k"), dim("m")
X, Y, X_q = MatrixSymbol("X", n, p), MatrixSymbol("Y", n, k), MatrixSymbol("X_q", m, p)
eta = scalar("eta", positive=True)


@theorem(routes=[Route("shrunk", "main", {"X_q": "X_query", "X": "X", "Y": "Y", "eta": "eta"})])
def shrunk_dual():
    b = ProofBuilder("shrunk_dual", "Ridge with 2η, dual", "Push-through with a scaled penalty.", [])
    gram = add(mul(transpose(X), X), mul(2 * eta, Identity(p)))
    b.main(mul(X_q, inv(gram), transpose(X), Y)).auto(
        mul(X_q, transpose(X), inv(add(mul(X, transpose(X)), mul(2 * eta, Identity(n)))), Y))
    return b.proof()
'''


def test_a_route_of_a_users_theorem_with_a_scalar_becomes_a_public_function(tmp_path):
    """A user's route with a scalar and a multiple of I prints as the built-in ridge routes do."""
    (tmp_path / "routes.py").write_text(SCALAR_ROUTE_FILE)
    result = run(tmp_path, "codegen", "--library", "routes.py", "--out", "code")
    assert result.returncode == 0, result.stderr
    check = ("import sys; sys.path.insert(0, 'code'); import numpy as np, routes_numpy as oa, routes_mpmath as om\n"
             "rng = np.random.default_rng(2); X = rng.standard_normal((6, 9)); Y = rng.standard_normal((6, 2))\n"
             "want = np.linalg.solve(X.T @ X + 0.5 * np.eye(9), X.T @ Y)\n"
             "beta = oa.shrunk(X, Y, 0.25)\n"
             "assert np.allclose(beta, want, rtol=1e-10, atol=1e-12), (beta, want)\n"
             "mp = om.shrunk(X.tolist(), Y.tolist(), '0.25')\n"
             "assert abs(float(mp[0, 0]) - want[0, 0]) < 1e-12\n"
             "print(oa.shrunk.__doc__)")
    used = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=tmp_path)
    assert used.returncode == 0, used.stderr
    assert "matrices and scalars" in used.stdout and "eta" in used.stdout


def test_a_route_of_a_users_theorem_becomes_a_public_function_of_the_generated_modules(tmp_path):
    (tmp_path / "routes.py").write_text(ROUTE_FILE.replace("NAME", "qr_coefficients"))
    result = run(tmp_path, "codegen", "--library", "routes.py", "--out", "code")
    assert result.returncode == 0, result.stderr
    check = ("import sys; sys.path.insert(0, 'code'); import numpy as np, mpmath, routes_numpy as oa, "
             "routes_mpmath as om\n"
             "rng = np.random.default_rng(1); X = rng.standard_normal((30, 3)); Y = rng.standard_normal((30, 2))\n"
             "Q, R = np.linalg.qr(X)\n"
             "beta = oa.qr_coefficients(Q, R, Y)\n"
             "assert np.allclose(beta, np.linalg.lstsq(X, Y, rcond=None)[0], rtol=1e-12, atol=1e-13), beta\n"
             "assert 'qr_coefficients' in oa.__all__ and 'qr_coefficients' in om.__all__\n"
             "mp = om.qr_coefficients(*(mpmath.matrix(a.tolist()) for a in (Q, R, Y)))\n"
             "assert abs(float(mp[0, 0]) - beta[0, 0]) < 1e-12\n"
             "print(oa.qr_coefficients.__doc__.splitlines()[0])")
    used = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=tmp_path)
    assert used.returncode == 0, used.stderr
    assert "printed from qr_predictions, lemma main (route qr_coefficients)" in used.stdout
    header = (tmp_path / "code" / "routes_numpy.py").read_text()
    assert "qr_coefficients" in header.split('"""')[1]  # the header names the function and its theorem
    assert "qr_coefficients" not in (tmp_path / "code" / "ols_attention.py").read_text()  # the package's: unchanged


def test_a_route_named_like_a_function_of_the_package_is_printed_in_the_librarys_module(tmp_path):
    """The library's module is its own: a route may be named ``predict`` there; the package's ``predict`` stays."""
    (tmp_path / "routes.py").write_text(ROUTE_FILE.replace("NAME", "predict"))
    result = run(tmp_path, "codegen", "--library", "routes.py", "--out", "code")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "\ndef predict(Q, R, Y):" in (tmp_path / "code" / "routes_numpy.py").read_text()
    text = (tmp_path / "code" / "ols_attention.py").read_text()
    assert text.count("\ndef predict(") == 1 and "\ndef predict(X: npt.ArrayLike" in text  # the module's own


def test_a_route_that_would_shadow_a_name_of_the_librarys_module_is_named_and_left_out(tmp_path):
    (tmp_path / "routes.py").write_text(ROUTE_FILE.replace("NAME", "np"))
    result = run(tmp_path, "codegen", "--library", "routes.py", "--out", "code")
    assert result.returncode == 4 and "Traceback" not in result.stderr
    assert "not printed: theorem qr_predictions, route np: route np (qr_predictions) cannot be a public function " \
           "of the module of routes.py" in result.stderr
    assert "\ndef np(" not in (tmp_path / "code" / "routes_numpy.py").read_text()


# --- routes of the general shape (tests/data/user_routes.py) ---------------------------------------------------

UNPRINTABLE = ("not printed: theorem query_weights, term root: refusing to print the matrix power (X.T*X)**2 "
               "(only diagonal factors take powers)")
BACKEND_NAMES = ("numpy", "mpmath", "xp", "dask")


def code_files(library: str) -> tuple[str, ...]:
    """The modules of a library's own that ``derive codegen`` writes (``<library>_<backend>.py``)."""
    return tuple(f"{library}_{backend}.py" for backend in BACKEND_NAMES)


CODE_FILES = code_files("user_routes")
PRINTED_HERE = ["refined_coefficients", "augmented_ridge", "explained", "hat", "query_weights", "precision"]


@pytest.fixture(scope="module")
def general(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """``derive codegen`` on a library whose routes repeat an inverse, hold blocks, scalars and terms, and
    declare one term that cannot be printed."""
    work = tmp_path_factory.mktemp("general")
    shutil.copy(DATA / "user_routes.py", work / "user_routes.py")
    return work, run(work, "codegen", "--library", "user_routes.py", "--out", "code")


def test_codegen_writes_what_it_can_and_names_what_it_cannot(general):
    work, result = general
    assert result.returncode == 4, result.stderr  # something not printed (named)
    assert [line for line in result.stderr.splitlines() if line.startswith("not printed")] == [UNPRINTABLE]
    assert "Traceback" not in result.stderr
    for name in CODE_FILES:
        text = (work / "code" / name).read_text()
        header = text.split('"""')[1]
        assert "query_weights, term root: refusing to print the matrix power" in header, name
        assert "def root(" not in text
    numpy_text = (work / "code" / "user_routes_numpy.py").read_text()
    assert all(f"def {name}(" in numpy_text for name in PRINTED_HERE)
    assert "refined_coefficients" not in (work / "code" / "ols_attention.py").read_text()  # the package's: unchanged
    assert not list((work / "code").glob(".*.tmp"))  # written through temporary files, renamed


def test_strict_codegen_exits_nonzero_and_still_writes_the_others(general):
    work, _ = general
    result = run(work, "codegen", "--library", "user_routes.py", "--out", "strict", "--strict", "--backend", "numpy")
    assert result.returncode == 4 and UNPRINTABLE in result.stderr.splitlines()
    # deterministic: the same library gives the same bytes
    for name in ("ols_attention.py", "user_routes_numpy.py"):
        assert (work / "strict" / name).read_bytes() == (work / "code" / name).read_bytes()


def test_a_failed_proof_fails_codegen_and_is_named(tmp_path):
    text = (DATA / "user_routes.py").read_text().replace("mul(-1, X, G_inv_b)", "mul(-2, X, G_inv_b)")
    assert "mul(-2, X, G_inv_b)" in text  # a false identity: the kernel refuses the proof
    (tmp_path / "broken.py").write_text(text)
    result = run(tmp_path, "codegen", "--library", "broken.py", "--out", "code", "--backend", "numpy")
    assert result.returncode == 1
    assert "FAILED refined_ols/main step 1 (rule auto)" in result.stderr
    assert ("not printed: theorem refined_ols, route refined_coefficients: its theorem's proof was not checked"
            in result.stderr.splitlines())
    written = (tmp_path / "code" / "broken_numpy.py").read_text()
    assert "def augmented_ridge(" in written and "def refined_coefficients(" not in written


def test_general_routes_share_work_and_solve_instead_of_inverting(general):
    work, _ = general
    text = (work / "code" / "user_routes_numpy.py").read_text()
    public = text.split('"""', 2)[2]  # the functions of the library's module and the helpers they call
    refined = public.split("def refined_coefficients(")[1].split("\ndef ")[0]
    # XᵀX formed once and factored once, G⁻¹XᵀY solved once and reused, every inverse a solve with the factors
    assert refined.count("@ X)") == 1 and "np.linalg.solve(" not in refined, refined
    assert refined.count("_printed_factor(") == 1 and refined.count("_printed_factor_solve(") == 2, refined
    factor_line = next(line for line in refined.splitlines() if "_printed_factor(" in line)
    factors = factor_line.split("=")[0].strip()
    assert refined.count(f"_printed_factor_solve({factors}, ") == 2, refined
    assert text.count("def _printed_factor(") == 1 and text.count("def _printed_factor_solve(") == 1
    # the one explicit inverse: (XᵀX)⁻¹ applied to nothing (the term precision)
    assert public.count("np.linalg.inv") == 1 and "precision = np.linalg.inv(" in public
    assert text.count("def _printed_block(") == 1  # the block helper, defined once in the printed section
    assert "_printed_block([[X], [(\"I\", X.shape[-1], mu)]])" in public


#: The generated modules a check script runs: NumPy and mpmath with the package alone; the array-API and Dask
#: modules where their optional packages are installed (each a test of its own, skipped cleanly without them).
BACKENDS = {"numpy": (), "frameworks": ("array_api_compat", "dask.array")}
IMPORTS = {"numpy": "import {lib}_numpy as oa, {lib}_mpmath as om\nox = od = None\nframeworks = [oa]\n",
           "frameworks": "import {lib}_numpy as oa, {lib}_mpmath as om, {lib}_xp as ox, "
                         "{lib}_dask as od\nframeworks = [ox, od]\n"}


def _backend_imports(backend: str, library: str = "user_routes") -> str:
    for module in BACKENDS[backend]:
        pytest.importorskip(module)
    return IMPORTS[backend].format(lib=library)


@pytest.mark.parametrize("backend", BACKENDS)
def test_general_routes_agree_with_numpy_on_every_backend(general, backend):
    work, _ = general
    check = '''
import sys
sys.path.insert(0, "code")
import numpy as np
''' + _backend_imports(backend) + '''

rng = np.random.default_rng(3)
X, Y, Xq, mu = rng.standard_normal((12, 4)), rng.standard_normal((12, 2)), rng.standard_normal((5, 4)), 0.7
G = X.T @ X
references = {
    "refined_coefficients": (np.linalg.solve(G, X.T @ Y), (X, Y)),
    "augmented_ridge": (np.linalg.solve(G + mu**2 * np.eye(4), X.T @ Y), (X, Y, mu)),
    "explained": (Y.T @ X @ np.linalg.solve(G, X.T @ Y), (X, Y)),
    "hat": (X @ np.linalg.solve(G, X.T), (X,)),
    "query_weights": (Xq @ np.linalg.inv(G), (X, Xq)),
    "precision": (np.linalg.inv(G), (X,)),
}
for name, (want, args) in references.items():
    for module in frameworks:
        got = np.asarray(getattr(module, name)(*args))
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-10, atol=1e-12), (module.__name__, name)
        assert name in module.__all__
    got = getattr(om, name)(*[a.tolist() if isinstance(a, np.ndarray) else str(a) for a in args])
    assert np.allclose(np.array(got.tolist(), dtype=float), want, rtol=1e-12, atol=1e-13), ("mpmath", name)
Xb, Yb = rng.standard_normal((3, 12, 4)), rng.standard_normal((3, 12, 2))  # a stack of problems
want = np.linalg.solve(Xb.mT @ Xb + mu**2 * np.eye(4), Xb.mT @ Yb)
assert np.allclose(oa.augmented_ridge(Xb, Yb, mu), want, rtol=1e-10, atol=1e-12)
assert ox is None or np.allclose(ox.augmented_ridge(Xb, Yb, mu), want, rtol=1e-10, atol=1e-12)
want = np.linalg.solve(Xb.mT @ Xb, Xb.mT @ Yb)  # the factored-once route on a stack: one solve per use
assert np.allclose(oa.refined_coefficients(Xb, Yb), want, rtol=1e-10, atol=1e-12)
M, B = rng.standard_normal((4, 4)) + 4 * np.eye(4), rng.standard_normal((4, 3))
for transpose in (False, True):  # the factors solve with M and with Mᵀ (B M⁻¹ is a solve with Mᵀ)
    want = np.linalg.solve(M.T if transpose else M, B)
    assert np.allclose(oa._printed_factor_solve(oa._printed_factor(M), B, transpose), want, rtol=1e-12, atol=1e-12)
sys.modules["scipy.linalg"] = None  # without SciPy the factored-once route solves each time
assert oa._printed_factor(M)[1] is None
assert np.allclose(oa.refined_coefficients(X, Y), references["refined_coefficients"][0], rtol=1e-10, atol=1e-12)
print("agree")
'''
    used = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=work)
    assert used.returncode == 0 and used.stdout.strip() == "agree", used.stdout + used.stderr


def _ruff(code: Path, files: tuple[str, ...] = CODE_FILES) -> subprocess.CompletedProcess | None:
    """ruff on the generated modules in ``code`` with the project's settings (None where ruff is not installed)."""
    ruff = shutil.which("ruff")
    if ruff is None:
        return None
    root = Path(__file__).resolve().parents[1]
    return subprocess.run([ruff, "check", "--config", str(root / "pyproject.toml"), *files],
                          capture_output=True, text=True, cwd=code)


def test_generated_modules_with_general_routes_pass_ruff(general):
    work, _ = general
    result = _ruff(work / "code")
    if result is None:
        pytest.skip("ruff is not installed")
    assert result.returncode == 0, result.stdout


# --- routes from the identities .auto proves (tests/data/identity_routes.py) ------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_routes_of_identities_factor_a_repeated_inverse_once_and_agree_with_numpy(tmp_path, backend):
    """Woodbury's right side holds A⁻¹ three times (once alone): A is factored once and every A⁻¹ is a solve with
    its factors; ridge shrinkage towards β̂ prints with its definition expanded. Both agree with NumPy."""
    shutil.copy(DATA / "identity_routes.py", tmp_path / "identity_routes.py")
    result = run(tmp_path, "codegen", "--library", "identity_routes.py", "--out", "code", "--strict")
    assert result.returncode == 0, result.stderr
    assert not [line for line in result.stderr.splitlines() if line.startswith("not printed")]
    text = (tmp_path / "code" / "identity_routes_numpy.py").read_text()
    woodbury = text.split("def woodbury_inverse(")[1].split("\ndef ")[0]
    assert woodbury.count("_printed_factor(A)") == 1 and "np.linalg.inv(A)" not in woodbury, woodbury
    assert woodbury.count("_printed_factor_solve(A_lu, ") == 4, woodbury  # A⁻¹ alone, A⁻¹U, and B A⁻¹ twice
    check = '''
import sys
sys.path.insert(0, "code")
import numpy as np
''' + _backend_imports(backend, "identity_routes") + '''
rng = np.random.default_rng(5)
A, C = rng.standard_normal((4, 4)) + 4 * np.eye(4), rng.standard_normal((2, 2)) + 3 * np.eye(2)
U, V = rng.standard_normal((4, 2)), rng.standard_normal((2, 4))
X, Y, lam = rng.standard_normal((9, 4)), rng.standard_normal((9, 2)), 0.3
references = {"woodbury_inverse": (np.linalg.inv(A + U @ C @ V), (A, U, C, V)),
              "ridge_from_ols": (np.linalg.solve(X.T @ X + lam * np.eye(4), X.T @ Y), (X, Y, lam))}
for name, (want, args) in references.items():
    for module in frameworks:
        got = np.asarray(getattr(module, name)(*args))
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-10, atol=1e-12), (module.__name__, name)
    got = getattr(om, name)(*[a.tolist() if isinstance(a, np.ndarray) else str(a) for a in args])
    assert np.allclose(np.array(got.tolist(), dtype=float), want, rtol=1e-12, atol=1e-13), ("mpmath", name)
Ab = A + 0.1 * rng.standard_normal((3, 4, 4))  # a stack: the factors are the matrices, solved each time
want = np.linalg.inv(Ab + U @ C @ V)
assert np.allclose(oa.woodbury_inverse(Ab, U, C, V), want, rtol=1e-10, atol=1e-12)
print("agree")
'''
    used = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=tmp_path)
    assert used.returncode == 0 and used.stdout.strip() == "agree", used.stdout + used.stderr


# --- a 1×1 inverse as a coefficient, and the printer's bounds (tests/data/normalised_attention.py, issue 41) --------

#: ``derive codegen`` on the library takes a few seconds; before issue 41 it looped forever on normalised attention.
CODEGEN_SECONDS = 120
TOO_WIDE = ("not printed: theorem wide_sum, term wide: its terms have more than 4,000 nodes, the printer's bound on "
            "one route")
NORMALISED = ("normalised_attention", "normalised_attention_solve", "narrow")


@pytest.fixture(scope="module")
def normalised(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess | None]:
    """``derive codegen`` on normalised attention, (1ᵀKq)⁻¹VᵀKq, and a term past the printer's bound; None where it
    did not finish within ``CODEGEN_SECONDS``."""
    work = tmp_path_factory.mktemp("normalised")
    shutil.copy(DATA / "normalised_attention.py", work / "normalised_attention.py")
    try:
        result = subprocess.run([sys.executable, "-m", "derive", "codegen", "--library", "normalised_attention.py",
                                 "--out", "code"], capture_output=True, text=True, cwd=work, timeout=CODEGEN_SECONDS,
                                env=dict(os.environ), preexec_fn=lambda: os.umask(0o022))
    except subprocess.TimeoutExpired:
        result = None
    return work, result


def _finished(normalised) -> tuple[Path, subprocess.CompletedProcess]:
    work, result = normalised
    if result is None:
        pytest.fail(f"derive codegen did not finish within {CODEGEN_SECONDS} s (issue 41: it looped on the 1×1 "
                    "coefficient (1ᵀKq)⁻¹ of normalised attention)")
    return work, result


def test_a_1x1_inverse_as_a_coefficient_prints_and_a_term_past_the_bound_is_named(normalised):
    """Issue 41: the route whose term is (1ᵀKq)⁻¹VᵀKq prints in every module (Kq formed once, the 1×1 inverse a
    reciprocal), and a term too large for the printer is named with its reason while the others are printed."""
    work, result = _finished(normalised)
    assert result.returncode == 4 and "Traceback" not in result.stderr, result.stderr  # wide: not printed
    assert [line for line in result.stderr.splitlines() if line.startswith("not printed")] == [TOO_WIDE]
    for name in code_files("normalised_attention"):
        text = (work / "code" / name).read_text()
        assert all(f"\ndef {function}(" in text for function in NORMALISED), name
        assert "\ndef wide(" not in text and "wide_sum, term wide: its terms have more than 4,000 nodes" in \
            " ".join(text.split('"""')[1].split()), name
    numpy_text = (work / "code" / "normalised_attention_numpy.py").read_text()
    body = numpy_text.split("\ndef normalised_attention(")[1].split("\ndef ")[0]
    assert body.count("(K @ q)") == 1 and "np.linalg.inv" not in body, body
    linted = _ruff(work / "code", code_files("normalised_attention"))
    assert linted is None or linted.returncode == 0, linted.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_normalised_attention_agrees_with_numpy_on_every_backend(normalised, backend):
    work, _ = _finished(normalised)
    check = '''
import sys
sys.path.insert(0, "code")
import numpy as np
''' + _backend_imports(backend, "normalised_attention") + '''
rng = np.random.default_rng(41)
n, d, dv = 9, 4, 3
K, q, V, one = rng.standard_normal((n, d)), rng.standard_normal((d, 1)), rng.standard_normal((n, dv)), np.ones((n, 1))
K = K + 1.0  # 1ᵀKq away from 0
want = V.T @ K @ q / (one.T @ K @ q)[0, 0]
assert np.allclose(want, V.T @ K @ q @ np.linalg.inv(one.T @ K @ q))
for name in ("normalised_attention", "normalised_attention_solve"):
    for module in frameworks:
        got = np.asarray(getattr(module, name)(K, q, V, one))
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-10, atol=1e-12), (module.__name__, name)
    got = getattr(om, name)(K.tolist(), q.tolist(), V.tolist(), one.tolist())
    assert np.allclose(np.array(got.tolist(), dtype=float), want, rtol=1e-12, atol=1e-13), ("mpmath", name)
Kb, qb, Vb = rng.standard_normal((5, n, d)) + 1.0, rng.standard_normal((5, d, 1)), rng.standard_normal((5, n, dv))
want = Vb.mT @ Kb @ qb / (one.T @ Kb @ qb)  # a stack of queries: one normaliser each
for module in [oa] + [m for m in (ox,) if m is not None]:
    got = np.asarray(module.normalised_attention(Kb, qb, Vb, one))
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-10, atol=1e-12), module.__name__
A0, A1 = rng.standard_normal((2, 4, 4))
assert np.allclose(oa.narrow(A0, A1), A0 @ A1) and "wide" not in oa.__all__
print("agree")
'''
    used = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=work)
    assert used.returncode == 0 and used.stdout.strip() == "agree", used.stdout + used.stderr
