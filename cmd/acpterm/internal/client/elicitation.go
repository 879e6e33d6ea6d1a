package client

import (
	"context"
	"io"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/ask"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// This file answers elicitation/create: a form the agent wants the user
// to fill in. acpterm advertises form elicitation when it has a terminal
// to ask on, and asks each field there (ask.Field) with the line editor;
// URL elicitations, and any form when nobody can be asked, are declined.

// elicitingHandler is the run's handler with elicitation/create served.
type elicitingHandler struct {
	*handler
	el *elicitor
}

var _ acp.Elicitor = (*elicitingHandler)(nil)

func (h *elicitingHandler) CreateElicitation(ctx context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
	return h.el.create(ctx, req)
}

// CompleteElicitation is for URL elicitations, which acpterm does not
// take.
func (h *elicitingHandler) CompleteElicitation(context.Context, *acp.CompleteElicitationNotification) error {
	return nil
}

// elicitationCapabilities is what initialize advertises: forms, when there
// is a terminal to ask on.
func (d *driver) elicitationCapabilities() *acp.ElicitationCapabilities {
	if d.ask == nil {
		return nil
	}
	return &acp.ElicitationCapabilities{Form: &acp.ElicitationFormCapabilities{}}
}

type elicitor struct{ d *driver }

func (e *elicitor) create(ctx context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
	d := e.d
	form, ok := req.Mode.(*acp.ElicitationFormMode)
	fields := ask.Fields(form)
	if !ok || d.ask == nil || fields == nil {
		return &acp.CreateElicitationResponse{Action: &acp.ElicitationDeclineAction{}}, nil
	}
	p := d.ask
	// One question at a time: a permission question waits meanwhile.
	if !p.Acquire(ctx, nil) {
		return nil, ctx.Err()
	}
	defer p.Release()
	resume := p.Suspend()
	defer resume()
	out := p.Out()
	ed := newLineEditor(p, out, d.perm.Done())
	_, _ = io.WriteString(out, "\n"+textsafe.Text(render.Clip(req.Message, 2000))+"\n(the agent asks; Enter takes the default or skips an optional field, Ctrl-C cancels)\n")
	content := map[string]acp.ElicitationContentValue{}
	readLine := func(prompt string) (string, error) { return ed.readLine(prompt, ctx.Done()) }
	for _, f := range fields {
		v, err := f.Ask(ctx, readLine, out)
		if err != nil {
			_, _ = io.WriteString(out, "(cancelled)\n")
			return &acp.CreateElicitationResponse{Action: &acp.ElicitationCancelAction{}}, nil
		}
		if v != nil {
			content[f.Name()] = v
		}
	}
	return &acp.CreateElicitationResponse{Action: &acp.ElicitationAcceptAction{Content: content}}, nil
}
