"""Independent reference routes for tests: mpmath quadrature of defining integrals (never the code under test)."""
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
