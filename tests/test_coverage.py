"""Coverage: every registered closed form is proved by a derivation (symbolically, or by an explicit numeric
identity check) and named by a validation check; every derivation's LaTeX is well formed."""

import igbsym
from igbsym.derivations.base import document
from test_latex import check_well_formed


def test_every_form_has_a_derivation(all_derivations):
    proven = set().union(*(d.proven_forms() for d in all_derivations))
    missing = sorted(set(igbsym.names()) - proven)
    assert not missing, f"forms without a derivation: {missing}"


def test_every_form_has_a_validation_check():
    from igbsym.validation.checks import coverage
    missing = [row["name"] for row in coverage() if row["check"] is None]
    assert not missing, f"forms without a validation check: {missing}"


def test_every_form_is_caught_by_the_recorded_mutation_meta_test():
    """The record of tests/test_mutation.py (validation/mutation_coverage.json) covers every form, every form's
    mutations are caught, and no check changed since the record was made (else 'stale'): read, not re-run."""
    from igbsym.validation.checks import coverage
    bad = {row["name"]: row["status"] for row in coverage() if row["status"] != "caught"}
    assert not bad, f"forms not covered by a caught mutation (refresh: python -m igbsym.validation.checks " \
                    f"--write-mutation): {bad}"


def test_derivation_documents_are_well_formed(all_derivations):
    for d in all_derivations:
        check_well_formed(document([d]))


def test_errata_are_recorded_with_what_is_right(all_derivations):
    errata = [e for d in all_derivations for e in d.errata]
    assert any("Lemma F.1" in e["where"] for e in errata)
    assert all(e["correct"] and e["how"] for e in errata)
