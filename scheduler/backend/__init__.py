"""State kept between scheduling cycles that plugins never see: the cache of assumed pods, the
scheduling queue, the nominator (upstream backend/)."""
