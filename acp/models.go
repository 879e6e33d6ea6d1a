package acp

import (
	"context"
	"encoding/json"
	"sync"
)

// Session models, as some agents still offer them (gemini-cli sends them
// in its session/new result and serves session/set_model): a draft of ACP
// v1 had a "models" field in the results of session/new, session/load and
// session/resume, and a session/set_model request. Both have since left the
// schema, which offers model choice as a session config option of category
// model instead, so they are not among the generated types. A ClientConn
// reads them when they are there (see SessionModels) and sends
// session/set_model on request; prefer the config option when an agent
// offers both.

// MethodSessionSetModel is the draft's request to switch a session's model.
const MethodSessionSetModel = "session/set_model"

// ModelInfo is one model an agent offers.
type ModelInfo struct {
	ModelID     string  `json:"modelId"`
	Name        string  `json:"name"`
	Description *string `json:"description,omitempty"`
}

// SessionModelState is the models an agent offers for a session and the
// one in use.
type SessionModelState struct {
	AvailableModels []ModelInfo `json:"availableModels"`
	CurrentModelID  string      `json:"currentModelId"`
}

// SetSessionModelRequest is the params of session/set_model.
type SetSessionModelRequest struct {
	SessionID SessionID `json:"sessionId"`
	ModelID   string    `json:"modelId"`
}

// maxModelSessions bounds the sessions whose models a ClientConn keeps: a
// client has a handful; an agent that invents session IDs cannot make the
// map grow without end.
const maxModelSessions = 256

// sessionModels keeps the model state of each session that has one.
type sessionModels struct {
	mu sync.Mutex
	m  map[SessionID]*SessionModelState
}

func (s *sessionModels) set(id SessionID, st *SessionModelState) {
	if st == nil || id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[SessionID]*SessionModelState)
	}
	if _, ok := s.m[id]; !ok && len(s.m) >= maxModelSessions {
		return
	}
	s.m[id] = st
}

func (s *sessionModels) get(id SessionID) *SessionModelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[id]
	if !ok {
		return nil
	}
	c := *st
	c.AvailableModels = append([]ModelInfo(nil), st.AvailableModels...)
	return &c
}

func (s *sessionModels) setCurrent(id SessionID, model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[id]; ok {
		c := *st
		c.CurrentModelID = model
		s.m[id] = &c
	}
}

// withModels decodes a session result into resp and its draft "models"
// field, if any, into models; sessionID is the result's own sessionId
// (session/new's).
type withModels[T any] struct {
	resp      *T
	models    *SessionModelState
	sessionID SessionID
}

func (w *withModels[T]) UnmarshalJSON(b []byte) error {
	var err error
	if u, ok := any(w.resp).(json.Unmarshaler); ok {
		err = u.UnmarshalJSON(b) // the engine hands over valid JSON only
	} else {
		err = json.Unmarshal(b, w.resp)
	}
	if err != nil {
		return err
	}
	var m struct {
		SessionID SessionID          `json:"sessionId"`
		Models    *SessionModelState `json:"models"`
	}
	// A models field of another shape is not this draft's: ignored.
	if json.Unmarshal(b, &m) == nil {
		w.models, w.sessionID = m.Models, m.SessionID
	}
	return nil
}

// callSession sends a request whose result may carry a session's models,
// and records them for the session id names, or, when id is "", the one
// the result names.
func callSession[Resp any](ctx context.Context, c *ClientConn, method string, params any, id SessionID) (*Resp, error) {
	w := withModels[Resp]{resp: new(Resp)}
	if err := c.conn.rpc.Call(ctx, method, params, &w); err != nil {
		return nil, fromRPCError(err)
	}
	if id == "" {
		id = w.sessionID
	}
	c.models.set(id, w.models)
	return w.resp, nil
}

// SessionModels returns the models the agent offered for the session in
// the result of session/new, session/load or session/resume (with the
// current one updated by SetSessionModel), or nil when it offered none
// that way.
func (c *ClientConn) SessionModels(id SessionID) *SessionModelState { return c.models.get(id) }

// SetSessionModel sends session/set_model (see SessionModels).
func (c *ClientConn) SetSessionModel(ctx context.Context, req *SetSessionModelRequest) error {
	var raw json.RawMessage
	if err := c.conn.rpc.Call(ctx, MethodSessionSetModel, req, &raw); err != nil {
		return fromRPCError(err)
	}
	c.models.setCurrent(req.SessionID, req.ModelID)
	return nil
}
