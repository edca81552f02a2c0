"""Numerics of the multiclass family (IGB paper App. H), one concept per module; igbsym/families/multiclass.py
registers the forms that use them (its docstring is the map of the routes).

Deterministic: ``power`` (E[Phi_2^k], the 2-d reduction of the moments) and ``moments`` (var, max_fraction at
D = inf), ``three`` (C = 3), ``chamber`` (the dominant fraction's law at C = 4), ``observed`` (the finite-D entropy
kernel), ``counts`` (exact count statistics per fraction vector), ``binary`` (C = 2), ``paper`` (the paper's
construction). Randomised QMC (C >= 4): ``nets`` (base points), ``spherical`` (spherical-radial rules and control
variates), ``products`` (prod_j Phi(w - u_j)), ``tables`` (the law table of one (gamma, C)), ``law`` (cdf, pdf and
their bound), ``functionals`` (p_empty, n_empty, entropy), ``vectors`` (fraction vectors and counts at finite D),
``dominant`` (max_fraction, max_fraction_cdf). ``bounds``: every value's stated relative error; ``common``: what
they share."""
