package client

import (
	"context"
	"fmt"
	"strconv"

	"github.com/boincd/boincd/boinc"
)

// ExchangeVersions tells the server who we are and returns its version.
func (c *Client) ExchangeVersions(ctx context.Context) (Version, error) {
	req := fmt.Sprintf("<exchange_versions>\n   <major>%d</major>\n   <minor>%d</minor>\n   <release>%d</release>\n   <name>boincd %d.%d.%d</name>\n</exchange_versions>",
		boinc.ClientMajor, boinc.ClientMinor, boinc.ClientRelease, boinc.ClientMajor, boinc.ClientMinor, boinc.ClientRelease)
	body, err := c.Call(ctx, req)
	if err != nil {
		return Version{}, err
	}
	w, err := decodeOne[wireVersion](body, "server_version")
	if err != nil {
		return Version{}, c.parseErr("exchange_versions", err)
	}
	return Version{Major: int(w.Major), Minor: int(w.Minor), Release: int(w.Release)}, nil
}

// GetState returns the client's whole state.
func (c *Client) GetState(ctx context.Context) (*State, error) {
	body, err := c.Call(ctx, "<get_state/>")
	if err != nil {
		return nil, err
	}
	st, err := parseState(body)
	if err != nil {
		return nil, c.parseErr("get_state", err)
	}
	return st, nil
}

// GetResults returns the tasks; activeOnly limits them to those with an
// active task (started and not finished).
func (c *Client) GetResults(ctx context.Context, activeOnly bool) ([]Result, error) {
	flag := 0
	if activeOnly {
		flag = 1
	}
	body, err := c.Call(ctx, "<get_results>\n<active_only>"+strconv.Itoa(flag)+"</active_only>\n</get_results>")
	if err != nil {
		return nil, err
	}
	rs, err := decodeList(body, "results", "result", (*wireResult).result)
	if err != nil {
		return nil, c.parseErr("get_results", err)
	}
	return rs, nil
}

// GetProjectStatus returns the attached projects.
func (c *Client) GetProjectStatus(ctx context.Context) ([]Project, error) {
	body, err := c.Call(ctx, "<get_project_status/>")
	if err != nil {
		return nil, err
	}
	ps, err := decodeList(body, "projects", "project", (*wireProject).project)
	if err != nil {
		return nil, c.parseErr("get_project_status", err)
	}
	return ps, nil
}

// GetCCStatus returns run modes, suspend reasons and network status.
func (c *Client) GetCCStatus(ctx context.Context) (*CCStatus, error) {
	body, err := c.Call(ctx, "<get_cc_status/>")
	if err != nil {
		return nil, err
	}
	w, err := decodeOne[wireCCStatus](body, "cc_status")
	if err != nil {
		return nil, c.parseErr("get_cc_status", err)
	}
	return w.status(), nil
}

// GetMessages returns the event-log messages with a sequence number above
// seqno, oldest first; 0 gets all the client still keeps.
func (c *Client) GetMessages(ctx context.Context, seqno int) ([]Message, error) {
	body, err := c.Call(ctx, "<get_messages>\n  <seqno>"+strconv.Itoa(seqno)+"</seqno>\n</get_messages>")
	if err != nil {
		return nil, err
	}
	ms, err := decodeList(body, "msgs", "msg", (*wireMessage).message)
	if err != nil {
		return nil, c.parseErr("get_messages", err)
	}
	return ms, nil
}

// GetMessageCount returns the highest message sequence number.
func (c *Client) GetMessageCount(ctx context.Context) (int, error) {
	body, err := c.Call(ctx, "<get_message_count/>")
	if err != nil {
		return 0, err
	}
	s, ok := elementText(body, "seqno")
	if !ok {
		return 0, c.parseErr("get_message_count", fmt.Errorf("reply has no <seqno>: %q", snippet(body)))
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, c.parseErr("get_message_count", fmt.Errorf("<seqno>: %q is not an integer", s))
	}
	return n, nil
}

// GetFileTransfers returns the pending uploads and downloads.
func (c *Client) GetFileTransfers(ctx context.Context) ([]FileTransfer, error) {
	body, err := c.Call(ctx, "<get_file_transfers/>")
	if err != nil {
		return nil, err
	}
	fs, err := decodeList(body, "file_transfers", "file_transfer", (*wireFileTransfer).transfer)
	if err != nil {
		return nil, c.parseErr("get_file_transfers", err)
	}
	return fs, nil
}

// GetHostInfo returns the host description.
func (c *Client) GetHostInfo(ctx context.Context) (*HostInfo, error) {
	body, err := c.Call(ctx, "<get_host_info/>")
	if err != nil {
		return nil, err
	}
	w, err := decodeOne[wireHostInfo](body, "host_info")
	if err != nil {
		return nil, c.parseErr("get_host_info", err)
	}
	h := w.hostInfo()
	return &h, nil
}

func (c *Client) parseErr(op string, err error) error {
	return fmt.Errorf("guirpc: %s reply from %s: %w", op, c.addr, err)
}
