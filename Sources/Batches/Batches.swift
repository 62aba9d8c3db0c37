// Batches: running a batch in order, the report and its writers.
