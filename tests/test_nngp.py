"""The data-kernel theory (igbsym/nngp, the ops' kernel maps, igbsym/families/nngp.py): every expected value from an
independent route (mpmath quadrature, brute-force sums, exact laws, Monte Carlo with SE, the registered i.i.d.
forms)."""
import json
import subprocess
import sys

import mpmath
import numpy as np
import pytest

import igbsym
from igbsym import activations as acts
from igbsym import gauss
from igbsym.errors import InputError, NumericalError
from igbsym.nngp import law as L
from igbsym.nngp import theory
from igbsym.nngp.walk import check_data, walk
from igbsym.ops import (Act, AvgPool2d, Conv2d, Dense, Flatten, GlobalAvgPool, LayerNorm, RMSNorm, BatchNorm,
                        MaxPool, Residual)
from igbsym.ops.datakernel import input_kernel
from igbsym.spec import NetSpec, resnet_ops


def _orthonormal(D=12, d=64, seed=0):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q[:D] * np.sqrt(d)


# ------------------------------------------------------------------------------------------ Gaussian expectations
def _ref_pair(name, k, va, vb):
    """E[φ(u)φ(v)] by nested adaptive quadrature (scipy.integrate.quad, absolute tolerance 1e-13): u = √va z,
    E[φ(v) | u] over v | u ~ N(k u/va, vb − k²/va): an independent route (not Gauss–Hermite)."""
    from scipy import integrate
    f = acts.get(name).numpy
    r, s, sd = k / va, np.sqrt(vb - k * k / va), np.sqrt(va)
    dens = lambda z: np.exp(-z * z / 2) / np.sqrt(2 * np.pi)  # noqa: E731

    def inner(m):
        return integrate.quad(lambda z: f(np.float64(m + s * z), 0.0, 0.0) * dens(z), -12, 12, epsabs=1e-13,
                              limit=200)[0]
    return integrate.quad(lambda z: f(np.float64(sd * z), 0.0, 0.0) * inner(r * sd * z) * dens(z), -12, 12,
                          epsabs=1e-13, limit=200)[0]


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "gelu", "silu"])
def test_pair_kernel_against_quadrature(name):
    """gauss.pair_kernel_np within its stated 1e-7 of E φ(u)² (KERNEL_ERROR) at unequal variances."""
    for k, va, vb in ((0.3, 0.8, 1.5), (-0.6, 1.2, 0.4), (0.95, 1.0, 1.0)):
        got = float(gauss.pair_kernel_np(name, 0.0, k, va, vb))
        ref = _ref_pair(name, k, va, vb)
        scale = float(gauss.moments_np(name, 0.0, max(va, vb))[1])
        assert abs(got - ref) <= 1e-7 * scale, (name, k, va, vb, got, ref)


@pytest.mark.parametrize("v", [3.0, 1.4889, 1e-200])
def test_erf_kernel_accepts_a_point_paired_with_itself(v):
    """Regression: k = v_a = v_b (a point's own variance, the diagonal of a data kernel) was refused where
    sqrt(v) sqrt(v) rounds below v (v = 3.0; the main job's nngp.kernels_vs_torch stopped on it). The value is
    (2/pi) arcsin(2v/(1 + 2v)) to the form's stated 1e-12 relative (mpmath, 30 digits); a k one part in 1e-12 above
    v is still refused."""
    got = float(igbsym.get("nngp.erf_kernel").numpy(k=v, v_a=v, v_b=v))
    with mpmath.workdps(30):
        ref = float(2 / mpmath.pi * mpmath.asin(2 * mpmath.mpf(v) / (1 + 2 * mpmath.mpf(v))))
    assert abs(got - ref) <= 1e-12 * ref, (got, ref)
    with pytest.raises(InputError, match="a covariance"):
        igbsym.get("nngp.erf_kernel").numpy(k=v * (1 + 1e-12), v_a=v, v_b=v)


def test_pair_kernel_refuses_beyond_its_range():
    with pytest.raises(NumericalError, match="outside the Gauss-Hermite"):
        gauss.pair_kernel_np("tanh", 0.0, 1.0, 25.0, 25.0)


def test_homogeneous_kernel_by_stein_and_quadrature():
    """leaky_relu, abs, relu, identity kernels against a 1-d mpmath integral with the exact inner mean
    E[φ(m + sξ)] = s'm + (1 − s')(m Φ(m/s) + s φ(m/s)) for φ = (1 − s') relu + s' x."""
    for name, a in (("leaky_relu", 0.2), ("abs", 0.0), ("relu", 0.0), ("identity", 0.0)):
        op = Act(name, a)
        sl = float(op.slope)
        for k, va, vb in ((0.4, 0.9, 1.3), (-0.7, 1.1, 0.6)):
            got = float(op.kernel_entry(np.float64(k), np.float64(va), np.float64(vb)))
            f = acts.get(name).mp
            with mpmath.workdps(25):
                r, s, sd = k / mpmath.mpf(va), mpmath.sqrt(vb - mpmath.mpf(k) ** 2 / va), mpmath.sqrt(va)
                inner = lambda m: sl * m + (1 - sl) * (m * mpmath.ncdf(m / s) + s * mpmath.npdf(m / s))  # noqa: E731
                ref = mpmath.quad(lambda z: f(sd * z, a, 0) * inner(r * sd * z) * mpmath.npdf(z),
                                  [-mpmath.inf, 0, mpmath.inf])
            assert got == pytest.approx(float(ref), rel=1e-12), (name, k)


# ------------------------------------------------------------------------------------------ linear maps, brute force
def _naive_conv(K, h, w, k, stride, pad):
    """k'(p, p') = (1/k²) Σ_δ K(s p + δ − pad, s p' + δ − pad), by loops over positions (zero outside)."""
    ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    K4 = K.reshape(h, w, h, w)
    out = np.zeros((ho, wo, ho, wo))
    for i1 in range(ho):
        for j1 in range(wo):
            for i2 in range(ho):
                for j2 in range(wo):
                    acc = 0.0
                    for di in range(k):
                        for dj in range(k):
                            a, b = i1 * stride + di - pad, j1 * stride + dj - pad
                            c, d = i2 * stride + di - pad, j2 * stride + dj - pad
                            if 0 <= a < h and 0 <= b < w and 0 <= c < h and 0 <= d < w:
                                acc += K4[a, b, c, d]
                    out[i1, j1, i2, j2] = acc / k**2
    return out.reshape(ho * wo, ho * wo)


@pytest.mark.parametrize("k,stride,pad", [(3, 1, 1), (2, 2, 0), (3, 2, 1), (5, 1, 2)])
def test_conv_and_pool_maps_against_brute_force(k, stride, pad):
    x = np.random.default_rng(1).standard_normal((3, 2, 6, 5))
    s = input_kernel(x, np.arange(3), np.arange(3), False)
    out = Conv2d(4, k, stride, pad, sigma_w=1.5).kernel(s)
    for a in range(3):
        for b in range(3):
            ref = 1.5**2 * _naive_conv(s.k[a, b], 6, 5, k, stride, pad)
            np.testing.assert_allclose(out.k[a, b], ref, rtol=1e-12, atol=1e-15 * np.abs(ref).max())
    # AvgPool2d: average of k x k windows on both positions, independently
    p = AvgPool2d(k, stride, pad).kernel(s)
    ho, wo = (6 + 2 * pad - k) // stride + 1, (5 + 2 * pad - k) // stride + 1
    win = lambda t, n: [t * stride + d - pad for d in range(k) if 0 <= t * stride + d - pad < n]  # noqa: E731
    K4 = s.k[0, 1].reshape(6, 5, 6, 5)
    ref = np.array([[sum(K4[a, b, c, d] for a in win(i1, 6) for b in win(j1, 5) for c in win(i2, 6) for d in win(j2, 5))
                     / k**4 for i2 in range(ho) for j2 in range(wo)] for i1 in range(ho) for j1 in range(wo)])
    np.testing.assert_allclose(p.k[0, 1], ref, rtol=1e-12, atol=1e-15 * np.abs(ref).max())
    g = GlobalAvgPool().kernel(s)
    assert g.k[0, 1, 0, 0] == pytest.approx(s.k[0, 1].mean(), rel=1e-13)
    d = Dense(3, 0.7, 0.2).kernel(Flatten().kernel(s))
    assert d.k[0, 1, 0, 0] == pytest.approx(0.49 * np.trace(s.k[0, 1]) / 30 + 0.04, rel=1e-13)


def test_layernorm_and_rmsnorm_maps_against_finite_layers():
    """Sample a wide ReLU layer, normalise each point over its units: the unit average matches the maps to O(1/N)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 30))
    s = Act("relu").kernel(Dense(None, 1.3).kernel(input_kernel(x, np.arange(2), np.arange(2), True)))
    n = 400000
    h = np.maximum(x @ rng.standard_normal((30, n)) * 1.3 / np.sqrt(30), 0)
    ln = (h - h.mean(1, keepdims=True)) / h.std(1, keepdims=True)
    rms = h / np.sqrt((h * h).mean(1, keepdims=True))
    for op, y in ((LayerNorm(), ln), (RMSNorm(), rms)):
        out = op.kernel(s)
        emp = y @ y.T / n
        # fluctuation of a unit average of O(1) products over n = 4e5 units: SE ~ 2e-3; z <= 5
        np.testing.assert_allclose(out.k[:, :, 0, 0], emp, atol=5 * 2e-3)


# ------------------------------------------------------------------------------------------ the i.i.d. limit
@pytest.mark.parametrize("act,L,norm,placement", [("relu", 1, "none", "pre"), ("relu", 4, "none", "pre"),
                                                  ("leaky_relu", 2, "none", "pre"), ("srelu", 2, "none", "pre"),
                                                  ("abs", 2, "none", "pre"), ("tanh", 2, "none", "pre"),
                                                  ("sigmoid", 2, "none", "pre"), ("relu", 3, "layernorm", "pre"),
                                                  ("gelu", 2, "rmsnorm", "post"), ("relu", 2, "layernorm", "post")])
def test_orthonormal_data_reproduce_depth_gamma(act, L, norm, placement):
    """K0 = I (the D -> oo limit of i.i.d. N(0, I_d) data, d -> oo) gives the width-limit gamma for any D."""
    spec = NetSpec(None, (None,) * L, act, norm=None if norm == "none" else norm, placement=placement)
    s = walk(spec.all_ops(), _orthonormal()).summaries[-1]
    got = float(igbsym.get("nngp.gamma").numpy(T=float(s.T.sum()), M_off=float(s.M_off.sum())))
    ref = float(igbsym.get("depth.gamma").numpy(L=L, activation=act, norm=norm, placement=placement))
    assert abs(got - ref) <= 1e-10 * max(abs(ref), 1e-12) + 1e-15, (got, ref)


@pytest.mark.parametrize("order,alpha", [("linear-first", 0.7), ("linear-last", 1.0), ("linear-first", 2.0)])
def test_orthonormal_data_reproduce_resnet_gamma(order, alpha):
    ops = resnet_ops(3, "relu", alpha, order=order) + (Dense(2),)
    s = walk(ops, _orthonormal()).summaries[-1]
    ref = float(igbsym.get("resnet.gamma").numpy(L=3, activation="relu", alpha=alpha, order=order))
    assert float(s.M_off.sum() / (s.T.sum() - s.M_off.sum())) == pytest.approx(ref, rel=1e-12)


def test_gaussian_data_approach_the_iid_limit():
    """Random N(0, I_d) data: |gamma_D - depth.gamma| shrinks as d grows (the O(1/sqrt(d)) fluctuations of x.x'/d)."""
    ref = float(igbsym.get("depth.gamma").numpy(L=2, activation="relu"))
    errs = []
    for d in (64, 1024, 16384):
        x = np.random.default_rng(3).standard_normal((150, d))
        s = walk(NetSpec(None, (None,) * 2, "relu").all_ops(), x).summaries[-1]
        errs.append(abs(float(s.M_off.sum() / (s.T.sum() - s.M_off.sum())) - ref))
    assert errs[2] < errs[1] < errs[0] and errs[2] < 0.01 * ref


# ------------------------------------------------------------------------------------------ conventions and law
def test_estimator_expectation_is_gamma_D_by_monte_carlo():
    """Sample the output GP (O ~ N(0, K)) many times; the plain estimator's units average to M_off/(T - M_off)."""
    from igbsym.validation.stats import gamma_units, ratio_estimate
    rng = np.random.default_rng(4)
    D = 20
    A = rng.standard_normal((D, 5)) + 0.8
    K = A @ A.T / 5
    T, M, M_off = L.kernel_means(K)
    O = rng.standard_normal((40000, 2, D)) @ np.linalg.cholesky(K + 1e-12 * np.eye(D)).T
    mu, var = O.mean(-1), O.var(-1, ddof=1)
    est = ratio_estimate(*gamma_units(mu, var, D))
    assert abs(est.value - L.gamma_estimand(T, M_off)) <= 5 * est.se
    assert L.gamma_population(T, M) == pytest.approx(L.gamma_estimand(T, M_off) * (1 + 1 / (D - 1))
                                                     + 1 / (D - 1), rel=1e-12)
    assert float(igbsym.get("nngp.gamma").numpy(T=T, M_off=M_off)) == pytest.approx(L.gamma_estimand(T, M_off))


def test_law_of_independent_points_is_binomial():
    """K = I: G0 = Binomial(D, 1/2)/D exactly; P(G0 outside [0.1, 0.9]) from the binomial law, z <= 5."""
    from scipy import stats
    D = 20
    law = L.sample(np.eye(D), 40000, 2, seed=5)
    p = stats.binom.cdf(1, D, 0.5) * 2          # G0 < 0.1 means <= 1 of 20; G0 > 0.9 means >= 19
    s = law.summary
    assert abs(s["p_outside_0.1_0.9"] - p) <= 5 * np.sqrt(p * (1 - p) / 40000)
    assert abs(s["mean_G0"] - 0.5) <= 5 * s["mean_G0_se"]


def test_law_of_a_rank_one_kernel_is_all_or_nothing():
    """K = 11^T (a linear net on one direction): every point has the same output: one class takes all."""
    law = L.sample(np.ones((30, 30)), 2000, 4, seed=6)
    assert law.rank == 1 and law.summary["max_fraction"] == 1.0 and law.summary["expected_empty_classes"] == 3.0
    with pytest.raises(NumericalError, match="not positive semidefinite"):
        L.sample(np.array([[1.0, 2.0], [2.0, 1.0]]), 10)


def test_truncation_bias_bound_is_honoured():
    """The truncated law differs from the full-rank one by less than its bound plus sampling noise."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((60, 3))
    K = np.exp(-((x[:, None] - x[None]) ** 2).sum(-1))          # a fast-decaying spectrum
    Lf, bound = L.factor(K, tol=1e-2)
    assert Lf.shape[1] < 60 and bound <= 1e-2
    a, b = L.sample(K, 20000, seed=8, tol=1e-2), L.sample(K, 20000, seed=8, tol=0.0)
    diff = abs(a.summary["max_fraction"] - b.summary["max_fraction"])
    assert diff <= 2 * bound + 5 * np.hypot(a.summary["max_fraction_se"], b.summary["max_fraction_se"])


def test_pair_sampling_is_unbiased_within_its_se():
    x = np.random.default_rng(9).standard_normal((120, 16)) + 0.3
    spec = NetSpec(None, (None,) * 2, "relu")
    full, sub = theory(spec, x, with_law=False), theory(spec, x, pairs=3000, seed=1)
    assert abs(sub.gamma - full.gamma) <= 5 * sub.gamma_se and sub.gamma_se > 0


# ------------------------------------------------------------------------------------------ refusals and bad input
@pytest.mark.parametrize("op,match", [(BatchNorm(), "BatchNorm"), (MaxPool(2), "MaxPool")])
def test_refused_ops_say_so_in_one_line(op, match):
    s = Dense(None).kernel(input_kernel(np.eye(3), np.arange(3), np.arange(3), True))
    with pytest.raises(InputError, match=match):
        op.kernel(s)


@pytest.mark.parametrize("x,match", [(np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN/inf"),
                                     (np.ones((5, 3)), "constant"), (np.ones((1, 3)), "D >= 2"),
                                     (np.array([1.0, 2.0]), "D >= 2")])
def test_bad_data(x, match):
    with pytest.raises(InputError, match=match):
        check_data(x)


def test_activation_on_non_gaussian_units_is_refused():
    with pytest.raises(InputError, match="not jointly Gaussian"):
        walk((Dense(None), Act("relu"), Act("relu"), Dense(2)), np.random.default_rng(0).standard_normal((4, 3)))


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "igbsym", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_cli_predict_on_data_json():
    r = _cli("predict", "--model", "mlp", "--data", "gaussian:1x8x8:120", "--zero-bias", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["law"]["n_draws"] == 100000 and out["layers"][-1]["ratio"] == pytest.approx(out["gamma"])


@pytest.mark.parametrize("args,match", [
    (("--model", "resnet", "--data", "digits"), "BatchNorm2d"),
    (("--model", "cnn-gap", "--data", "gaussian:64"), "image data"),
    (("--model", "mlp", "--data", "gaussian:1x8x8:1"), "D >= 2"),
    (("--model", "mlp", "--data", "nope.npy"), "does not exist"),
    (("--model", "mlp", "--data", "digits", "--depth", "3"), "--depth"),
    (("--model", "mlp"), "go together"),
    (("--zero-bias",), "data route")])
def test_cli_predict_bad_input_one_line(args, match, tmp_path):
    r = _cli("predict", *args, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and match in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_cli_predict_bad_data_files(tmp_path):
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [2.0, 3.0]]))
    np.save(tmp_path / "const.npy", np.ones((4, 64)))
    for name, match in (("nan.npy", "NaN/inf"), ("const.npy", "constant")):
        r = _cli("predict", "--model", "mlp", "--data", str(tmp_path / name))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and match in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["const.npy", "nan.npy"]


# ------------------------------------------------------------------------------------------ mutated kernel maps
def _scaled(orig, factor=1.25):
    def kernel(self, s):
        out = orig(self, s)
        return out.replace(k=out.k * factor, ka=out.ka * factor, kb=out.kb * factor)
    return kernel


def _ln_uncentred(self, s):
    return RMSNorm().kernel(s)


def _res_no_mean(self, s):
    f = s
    for op in self.block:
        f = op.kernel(f)
    a = float(self.alpha)
    return s.replace(k=s.k + a * a * f.k, ka=s.ka + a * a * f.ka, kb=s.kb + a * a * f.kb, ma=s.ma + a * f.ma,
                     mb=s.mb + a * f.mb)


def test_mutated_kernel_maps_fail_the_torch_comparison(monkeypatch):
    """Each op's kernel map scaled by 1.25 (and LayerNorm without centring, Residual without the stream-mean cross
    term) makes nngp.layers_vs_torch fail; unmutated it passes (quick mode, torch draws memoised)."""
    import torch
    from igbsym.validation import checks, checks_nngp
    torch.set_num_threads(1)
    ctx = checks.Context(mode="quick", seed=0)
    with checks.reuse_simulations():
        assert all(r.passed for r in checks_nngp.layer_comparisons(ctx))
        mutations = [(cls, _scaled(cls.kernel)) for cls in (Dense, Act, LayerNorm, Conv2d, AvgPool2d, GlobalAvgPool,
                                                            Residual)]
        mutations += [(LayerNorm, _ln_uncentred), (Residual, _res_no_mean)]
        for cls, fn in mutations:
            with monkeypatch.context() as m:
                m.setattr(cls, "kernel", fn)
                assert not all(r.passed for r in checks_nngp.layer_comparisons(ctx)), (cls.__name__, fn.__name__)


def test_cli_probe_theory_json(tmp_path):
    """probe --theory: gamma_inf next to gamma_hat, the KS of G0 against the GP law, per-module theory ratios."""
    r = _cli("probe", "--model", "mlp-residual", "--data", "gaussian:1x8x8:64", "--inits", "4", "--zero-bias",
             "--theory", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    th = json.loads(r.stdout)["theory"]
    assert th["ks"]["p_value"] >= 0 and th["law"]["classes"] == 2
    named = {row["name"].split(" ")[0]: row for row in th["layers"]}
    assert named["1"]["measured"] is not None and named["4"]["theory"] == pytest.approx(th["gamma_inf"])
