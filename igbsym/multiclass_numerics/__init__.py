"""Deterministic numerics of the multiclass family (IGB paper App. H): the 2-d reductions of its moments
(``power``: E[Phi_2^k], the second moment and the dominant-class mean), the C = 3 law and empty-class
probabilities (``three``), the C = 4 law of the dominant fraction on the ordered gaps (``chamber``), the finite-D
entropy kernel (``observed``) and the spherical-radial integration of the centred other means with its control
variates (``spherical``). The family module igbsym/families/multiclass.py
registers the forms that use them."""
