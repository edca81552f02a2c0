"""igbsym.validation: torch simulators of randomly initialised networks and the statistical checks of the forms.

``estimate_gamma(spec, rel_se=0.01, data=None, seed=0)`` (validation/estimate.py) is the package-level entry: γ̂ of
a finite network to a target precision with the fastest valid estimator. Imported lazily (it loads torch).
"""


def __getattr__(name):
    if name == "estimate_gamma":
        from .estimate import estimate_gamma
        return estimate_gamma
    raise AttributeError(f"module 'igbsym.validation' has no attribute {name!r}")
