package runner

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/mqplan/mqplan/plans"
)

// subscribeFailure is the error of a SUBSCRIBE that got no SUBACK. When
// the broker closed the connection on it and one of the filters is a
// shared subscription, it names that as the likely cause: a broker that
// does not take $share/... on MQTT 3.1.1 may drop the connection instead
// of answering (ejabberd closes it with a bare EOF right after SUBSCRIBE),
// and "EOF" alone says nothing of why.
func (r *run) subscribeFailure(pc *plans.Client, err error) error {
	if !closedByBroker(err) {
		return fmt.Errorf("subscribe %s: %w", pc.ID, cleanErr(err))
	}
	share := ""
	for _, s := range pc.Subscriptions {
		if strings.HasPrefix(s.Filter, "$share/") {
			share = s.Filter
			break
		}
	}
	if share == "" {
		return fmt.Errorf("subscribe %s: %w", pc.ID, cleanErr(err))
	}
	v := r.protocolOf(pc)
	if v >= 5 {
		return fmt.Errorf("subscribe %s: the broker closed the connection on SUBSCRIBE %s: it may not accept shared subscriptions", pc.ID, share)
	}
	name := "3.1.1"
	if v == 3 {
		name = "3.1"
	}
	return fmt.Errorf("subscribe %s: the broker closed the connection on SUBSCRIBE %s: it may not accept shared subscriptions on MQTT %s; try %s",
		pc.ID, share, name, r.protocolSetting(5))
}

// closedByBroker reports whether err is the broker ending the connection
// (end of stream, or a reset when it closed with our bytes unread).
func closedByBroker(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// protocolOf is the MQTT version client pc speaks: its group's, else the
// broker's.
func (r *run) protocolOf(pc *plans.Client) int {
	p := r.prog.Plan
	if pc.Group < len(p.Groups) && p.Groups[pc.Group].Protocol != 0 {
		return p.Groups[pc.Group].Protocol
	}
	return p.Broker.Protocol
}

// protocolSetting is how the user asks for MQTT version v: Options.
// ProtocolOption and v (mqplan sub's "-V 5"), or the plan's
// "broker.protocol: 5".
func (r *run) protocolSetting(v int) string {
	if o := r.opts.ProtocolOption; o != "" {
		return o + " " + strconv.Itoa(v)
	}
	return "broker.protocol: " + strconv.Itoa(v)
}
