package stats

// Cross is what a run wrote and was delivered beyond its phase counts,
// and what its $SYS monitor received, for the cross-check of the
// broker's own counters against mqplan's (runner.CrossCheck). Every
// field adds over the shards of a run split across processes (the
// monitor is shard 0's alone), so that the check runs once, on the whole
// run's figures, where a shard's own would be a part of what the broker
// saw.
type Cross struct {
	// Resent is the PUBLISH packets sent again on a resumed session,
	// ResentCounted those of them Mosquitto counts (QoS 1, not retained).
	Resent        int64 `json:"resent,omitempty"`
	ResentCounted int64 `json:"resent_counted,omitempty"`
	// Fences is the fences clean subscribers published, FencesBack those
	// delivered back.
	Fences     int64 `json:"fences,omitempty"`
	FencesBack int64 `json:"fences_back,omitempty"`
	// Monitor is the broker's $SYS messages to mqplan's monitor between
	// the start and end readings; MonitorMsgs every message the monitor
	// received, and MonitorBatch those of the broker's latest update (the
	// monitor may close before reading all of it).
	Monitor      int64 `json:"monitor,omitempty"`
	MonitorMsgs  int64 `json:"monitor_msgs,omitempty"`
	MonitorBatch int64 `json:"monitor_batch,omitempty"`
	// Mosquitto says the end reading came from Mosquitto (it counts no
	// QoS 2 or retained PUBLISH received); StartRetained that the start
	// reading was the retained copy of the broker's last update, not a
	// live one; EndStale that the end reading missed the broker's last
	// update, so the $SYS counters are not checked.
	Mosquitto     bool `json:"mosquitto,omitempty"`
	StartRetained bool `json:"start_retained,omitempty"`
	EndStale      bool `json:"end_stale,omitempty"`
}

// Add adds o's figures to c's.
func (c *Cross) Add(o *Cross) {
	c.Resent += o.Resent
	c.ResentCounted += o.ResentCounted
	c.Fences += o.Fences
	c.FencesBack += o.FencesBack
	c.Monitor += o.Monitor
	c.MonitorMsgs += o.MonitorMsgs
	c.MonitorBatch += o.MonitorBatch
	c.Mosquitto = c.Mosquitto || o.Mosquitto
	c.StartRetained = c.StartRetained || o.StartRetained
	c.EndStale = c.EndStale || o.EndStale
}
