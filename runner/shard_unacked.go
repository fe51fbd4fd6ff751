package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
)

// maxUnackedExchange bounds the unacknowledged messages the shards tell
// each other about when the run is over (8 bytes and a comma or so each
// in a coordinator frame, well under coord.MaxFrame).
const maxUnackedExchange = 1 << 22

// unackedExchangeWait bounds the exchange: every shard reaches it at the
// end of its run, the coordinator's loss detection ends it sooner when
// one cannot.
const unackedExchangeWait = time.Minute

// exchangeUnacked tells every shard which messages of this shard's
// publishers were never acknowledged (mine, by global client index) and
// returns every shard's, by publisher. A message the broker never
// acknowledged and a subscriber never received is lost_unacked, but
// whether it arrived is known only where each subscriber runs: each shard
// then counts the deliveries its own receivers missed, and the sums are
// the run's. Two barriers: the count per publisher, then the sequence
// numbers laid out in publisher order (each shard fills its own
// publishers' places, so the sum is the concatenation).
func (r *run) exchangeUnacked(mine [][]mqttc.Token) ([][]mqttc.Token, error) {
	sh := r.sh.shard
	ctx, cancel := context.WithTimeout(context.Background(), unackedExchangeWait)
	defer cancel()
	counts := make([]int64, len(mine))
	for p, toks := range mine {
		counts[p] = int64(len(toks))
	}
	counts, _, err := sh.Sync.Barrier(ctx, "unacked", counts, 0)
	if err == nil && len(counts) != len(mine) {
		err = fmt.Errorf("barrier unacked: %d figures back for %d", len(counts), len(mine))
	}
	if err != nil {
		return nil, err
	}
	total := int64(0)
	for _, n := range counts {
		if n < 0 {
			return nil, fmt.Errorf("barrier unacked: a negative count")
		}
		total += n
	}
	if total == 0 {
		return make([][]mqttc.Token, len(mine)), nil
	}
	if total > maxUnackedExchange {
		// Every shard sees the same total and stops here alike.
		return nil, fmt.Errorf("%d messages were never acknowledged, more than the %d the shards exchange", total, maxUnackedExchange)
	}
	vals := make([]int64, total)
	at := make([]int64, len(mine)+1)
	for p, n := range counts {
		at[p+1] = at[p] + n
		if len(mine[p]) > 0 {
			if int64(len(mine[p])) != n {
				return nil, fmt.Errorf("barrier unacked: client %d: %d messages, %d of them here", p, n, len(mine[p]))
			}
			for i, tok := range mine[p] {
				vals[at[p]+int64(i)] = int64(tok)
			}
		}
	}
	vals, _, err = sh.Sync.Barrier(ctx, "unacked tokens", vals, 0)
	if err == nil && int64(len(vals)) != total {
		err = fmt.Errorf("barrier unacked tokens: %d figures back for %d", len(vals), total)
	}
	if err != nil {
		return nil, err
	}
	all := make([][]mqttc.Token, len(mine))
	for p := range all {
		for _, v := range vals[at[p]:at[p+1]] {
			all[p] = append(all[p], mqttc.Token(v))
		}
	}
	return all, nil
}
