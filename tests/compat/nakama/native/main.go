// The repository's native example (examples/native: echo_native, the seed match seed_native
// and get_match_native) as a Nakama Go plugin, so the compatibility suite's native tests run
// against a real Nakama too. scripts/nakama.sh builds it inside Nakama's source tree (plugins
// must be built with the server's exact dependencies and flags). Test fixture, not product.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/heroiclabs/nakama-common/runtime"
)

const (
	handler          = "seed_native"
	tickRate         = 10
	maxPlayers       = 10
	reservationTicks = 10 * tickRate
	attempts         = 3
)

// InitModule registers what examples/native registers for the compatibility suite.
func InitModule(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, initializer runtime.Initializer) error {
	if err := initializer.RegisterRpc("echo_native", echo); err != nil {
		return err
	}
	if err := initializer.RegisterRpc("get_match_native", getMatch); err != nil {
		return err
	}
	return initializer.RegisterMatch(handler, func(context.Context, runtime.Logger, *sql.DB, runtime.NakamaModule) (runtime.Match, error) {
		return &seedMatch{}, nil
	})
}

// echo decodes the payload as JSON and encodes it back (keys sorted); not JSON is code 3.
func echo(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, payload string) (string, error) {
	var v interface{}
	if err := json.Unmarshal([]byte(payload), &v); err != nil {
		return "", runtime.NewError("payload is not valid JSON: "+err.Error(), 3)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", runtime.NewError("cannot encode the result", 13)
	}
	return string(out), nil
}

// getMatch answers {"match_id": ...} of a seed match with a seat reserved for the caller.
func getMatch(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, payload string) (string, error) {
	user, _ := ctx.Value(runtime.RUNTIME_CTX_USER_ID).(string)
	if user == "" {
		user = fmt.Sprintf("anonymous-%p", &payload)
	}
	minSize, maxSize := 0, maxPlayers-1
	for i := 0; i < attempts; i++ {
		found, err := nk.MatchList(ctx, 5, true, "", &minSize, &maxSize, "+handler_name:"+handler+" +label.open:1")
		if err != nil {
			return "", err
		}
		for _, m := range found {
			if answer, err := nk.MatchSignal(ctx, m.MatchId, user); err == nil && answer == "ok" {
				return matchID(m.MatchId), nil
			}
		}
		id, err := nk.MatchCreate(ctx, handler, map[string]interface{}{})
		if err != nil {
			return "", err
		}
		if answer, err := nk.MatchSignal(ctx, id, user); err == nil && answer == "ok" {
			return matchID(id), nil
		}
	}
	return "", runtime.NewError(fmt.Sprintf("no match had a free seat after %d attempts: try again", attempts), 13)
}

func matchID(id string) string {
	out, _ := json.Marshal(map[string]string{"match_id": id})
	return string(out)
}

type seedMatch struct{}

type seedState struct {
	players  map[string]bool
	reserved map[string]int64
	open     bool
}

func label(open bool) string {
	if open {
		return `{"kind":"seed","open":1}`
	}
	return `{"kind":"seed","open":0}`
}

func (s *seedState) taken() int { return len(s.players) + len(s.reserved) }

func (s *seedState) updateLabel(d runtime.MatchDispatcher) {
	open := s.taken() < maxPlayers
	if open != s.open {
		s.open = open
		_ = d.MatchLabelUpdate(label(open))
	}
}

func (m *seedMatch) MatchInit(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, params map[string]interface{}) (interface{}, int, string) {
	return &seedState{players: map[string]bool{}, reserved: map[string]int64{}, open: true}, tickRate, label(true)
}

func (m *seedMatch) MatchJoinAttempt(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, d runtime.MatchDispatcher, tick int64, state interface{}, presence runtime.Presence, metadata map[string]string) (interface{}, bool, string) {
	s := state.(*seedState)
	if _, ok := s.reserved[presence.GetUserId()]; ok {
		delete(s.reserved, presence.GetUserId())
		return s, true, ""
	}
	if s.taken() >= maxPlayers {
		return s, false, "match full"
	}
	return s, true, ""
}

func (m *seedMatch) MatchJoin(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, d runtime.MatchDispatcher, tick int64, state interface{}, presences []runtime.Presence) interface{} {
	s := state.(*seedState)
	for _, p := range presences {
		s.players[p.GetSessionId()] = true
	}
	s.updateLabel(d)
	return s
}

func (m *seedMatch) MatchLeave(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, d runtime.MatchDispatcher, tick int64, state interface{}, presences []runtime.Presence) interface{} {
	s := state.(*seedState)
	for _, p := range presences {
		delete(s.players, p.GetSessionId())
	}
	s.updateLabel(d)
	return s
}

func (m *seedMatch) MatchLoop(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, d runtime.MatchDispatcher, tick int64, state interface{}, messages []runtime.MatchData) interface{} {
	s := state.(*seedState)
	for _, msg := range messages {
		switch msg.GetOpCode() {
		case 1:
			_ = d.BroadcastMessage(1, msg.GetData(), []runtime.Presence{msg}, msg, true)
		case 2:
			_ = d.BroadcastMessage(2, msg.GetData(), nil, msg, true)
		}
	}
	if len(s.reserved) > 0 {
		for user, expires := range s.reserved {
			if tick >= expires {
				delete(s.reserved, user)
			}
		}
		s.updateLabel(d)
	}
	return s
}

func (m *seedMatch) MatchTerminate(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, d runtime.MatchDispatcher, tick int64, state interface{}, graceSeconds int) interface{} {
	return state
}

func (m *seedMatch) MatchSignal(ctx context.Context, logger runtime.Logger, db *sql.DB, nk runtime.NakamaModule, d runtime.MatchDispatcher, tick int64, state interface{}, data string) (interface{}, string) {
	s := state.(*seedState)
	if _, ok := s.reserved[data]; !ok && s.taken() >= maxPlayers {
		return s, "full"
	}
	s.reserved[data] = tick + reservationTicks
	s.updateLabel(d)
	return s, "ok"
}
