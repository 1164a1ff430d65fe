"""One pod's synchronous decision: profiles built into frameworks, the scheduling cycle and the
filter/score/select algorithm (upstream schedule_one.go's pure half, profile/)."""
