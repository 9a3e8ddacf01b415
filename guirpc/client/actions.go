package client

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
)

// The state-changing ops a manager sends, written as the C++ client
// library writes them (lib/gui_rpc_client_ops.cpp). Each needs an
// authorized connection (Authorize) and answers <success/>.

// resultOpTags are RPC_CLIENT::result_op's ops and their request tags.
var resultOpTags = map[string]string{
	"suspend": "suspend_result",
	"resume":  "resume_result",
	"abort":   "abort_result",
}

// ResultOp suspends, resumes or aborts a task: op is "suspend",
// "resume" or "abort" (RPC_CLIENT::result_op).
func (c *Client) ResultOp(ctx context.Context, projectURL, name, op string) error {
	tag, ok := resultOpTags[op]
	if !ok {
		return fmt.Errorf("guirpc: result op %q: not suspend, resume or abort", op)
	}
	return c.act(ctx, "<"+tag+">\n   <project_url>"+escape(projectURL)+"</project_url>\n   <name>"+escape(name)+"</name>\n</"+tag+">")
}

// projectOps are RPC_CLIENT::project_op's ops; the request tag is
// "project_" + op.
var projectOps = map[string]bool{
	"update": true, "suspend": true, "resume": true, "nomorework": true, "allowmorework": true,
	"reset": true, "detach": true, "detach_when_done": true, "dont_detach_when_done": true,
}

// ProjectOp acts on an attached project: op is "update", "suspend",
// "resume", "nomorework", "allowmorework", "reset", "detach",
// "detach_when_done" or "dont_detach_when_done" (RPC_CLIENT::project_op).
func (c *Client) ProjectOp(ctx context.Context, projectURL, op string) error {
	if !projectOps[op] {
		return fmt.Errorf("guirpc: project op %q: unknown", op)
	}
	tag := "project_" + op
	return c.act(ctx, "<"+tag+">\n  <project_url>"+escape(projectURL)+"</project_url>\n</"+tag+">")
}

// SetRunMode sets the computing mode, for d (0: permanently)
// (RPC_CLIENT::set_run_mode).
func (c *Client) SetRunMode(ctx context.Context, m boinc.RunMode, d time.Duration) error {
	return c.setMode(ctx, "set_run_mode", m, d)
}

// SetGPUMode sets the GPU mode (RPC_CLIENT::set_gpu_mode).
func (c *Client) SetGPUMode(ctx context.Context, m boinc.RunMode, d time.Duration) error {
	return c.setMode(ctx, "set_gpu_mode", m, d)
}

// SetNetworkMode sets the network mode (RPC_CLIENT::set_network_mode).
func (c *Client) SetNetworkMode(ctx context.Context, m boinc.RunMode, d time.Duration) error {
	return c.setMode(ctx, "set_network_mode", m, d)
}

// setMode writes RPC_CLIENT::mode_name's element and the duration in
// seconds with six decimals, as "%f" does.
func (c *Client) setMode(ctx context.Context, op string, m boinc.RunMode, d time.Duration) error {
	var name string
	switch m {
	case boinc.RunModeAlways:
		name = "always"
	case boinc.RunModeAuto:
		name = "auto"
	case boinc.RunModeNever:
		name = "never"
	case boinc.RunModeRestore:
		name = "restore"
	default:
		return fmt.Errorf("guirpc: %s: unknown mode %d", op, int(m))
	}
	if d < 0 {
		return fmt.Errorf("guirpc: %s: negative duration %v", op, d)
	}
	return c.act(ctx, "<"+op+">\n<"+name+"/>\n  <duration>"+strconv.FormatFloat(d.Seconds(), 'f', 6, 64)+"</duration>\n</"+op+">")
}

// act sends an op whose reply is <success/>. It reads the reply as
// RPC::parse_reply does: <success/> is done, <status>N</status> is done
// when N is 0; <error> and <unauthorized/> come from Call.
func (c *Client) act(ctx context.Context, request string) error {
	body, err := c.Call(ctx, request)
	if err != nil {
		return err
	}
	if bytes.HasPrefix(body, []byte("<success")) {
		return nil
	}
	op := opName(request)
	if s, ok := elementText(body, "status"); ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			return c.parseErr(op, fmt.Errorf("<status>: %q is not an integer", s))
		}
		if n == 0 {
			return nil
		}
		return &RPCError{Op: op, Msg: "status " + strconv.Itoa(n)}
	}
	return c.parseErr(op, fmt.Errorf("neither <success/> nor an error: %q", snippet(body)))
}

// escape makes a URL or task name safe inside an element. The C++
// library writes them raw; a name has no markup characters in practice,
// and a server that unescapes reads the same text either way.
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
