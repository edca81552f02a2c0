"""Independent reference routes for tests: mpmath quadrature of defining integrals (never the code under test), and
the plain layer-by-layer composition of the ops' maps that the depth shortcuts must reproduce."""
import mpmath


def gauss_expect(f, mu, sigma, lo=-mpmath.inf, hi=mpmath.inf, dps=40):
    """∫_lo^hi f(x) N(x; mu, sigma²) dx by mpmath.quad at ``dps`` digits, split at mu and 0."""
    with mpmath.workdps(dps):
        mu, sigma = mpmath.mpf(mu), mpmath.mpf(sigma)
        pts = sorted({lo, hi, *(p for p in (mpmath.mpf(0), mu, mu - 8 * sigma, mu + 8 * sigma) if lo < p < hi)})
        dens = lambda x: mpmath.exp(-((x - mu) / sigma) ** 2 / 2) / (sigma * mpmath.sqrt(2 * mpmath.pi))  # noqa
        return mpmath.quad(lambda x: f(x) * dens(x), pts)


def rel_err(got, ref) -> float:
    ref = mpmath.mpf(ref)
    return float(abs(mpmath.mpf(got) - ref) / abs(ref)) if ref != 0 else float(abs(mpmath.mpf(got)))


def layer_walk(act, norm, placement, sw, L, backend="numpy", a=0.01):
    """γ_1..γ_L of the depth MLP by composing the ops' maps layer by layer, with no shortcut (no fixed point, tail,
    Steffensen or Mehler series); stops where q leaves the quadrature's range or 1 − c leaves the double range."""
    from igbsym import ops as O
    from igbsym.errors import NumericalError
    from igbsym.families.depth import block
    ops = block(act, norm, placement, a, sw, shift_backend=backend)
    state, out = O.Dense(None, sw).map(O.input_state(backend), backend), []
    for _ in range(L):
        try:
            for op in ops:
                state = op.map(state, backend)
        except NumericalError:
            break
        if not state.e > 1e-300:
            break
        out.append(state.c / state.e if backend == "mpmath" else float(state.c) / float(state.e))
    return out
