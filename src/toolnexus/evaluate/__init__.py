"""One state or many: the request pipeline, its telemetry, batches, streams and packing."""
