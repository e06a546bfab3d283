"""The rules: commands decided into events against the current state, one module per feature, before a byte is
written. They read the state the reducers fold (:mod:`plantrail.projections`) and know no store."""
