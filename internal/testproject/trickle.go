package testproject

import (
	"strconv"
	"strings"
	"time"
)

// MsgFromHost is one trickle-up message a client sent, as a BOINC
// scheduler stores it in its msg_from_host table
// (sched/handle_request.cpp handle_msgs_from_host): the variety apart,
// the rest of the element's lines as the message text. ResultName and
// Time are read from that text for tests.
type MsgFromHost struct {
	HostID     int64
	Variety    string
	Text       string
	ResultName string
	Time       int64
	Received   time.Time
}

// msgFromHostXML is a <msg_from_host> of a request, kept raw.
type msgFromHostXML struct {
	Inner string `xml:",innerxml"`
}

// parseMsgFromHost splits a <msg_from_host> body line by line as
// MSG_FROM_HOST_DESC::parse does.
func parseMsgFromHost(inner string, hostID int64, now time.Time) MsgFromHost {
	m := MsgFromHost{HostID: hostID, Received: now}
	var text strings.Builder
	for line := range strings.SplitAfterSeq(inner, "\n") {
		if v, ok := between(line, "<variety>", "</variety>"); ok {
			m.Variety = v
			continue
		}
		if v, ok := between(line, "<result_name>", "</result_name>"); ok {
			m.ResultName = strings.TrimSpace(v)
		}
		if v, ok := between(line, "<time>", "</time>"); ok {
			m.Time, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		text.WriteString(line)
	}
	m.Text = text.String()
	return m
}

func between(s, open, closeTag string) (string, bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.Index(rest, closeTag)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// SendMsgToHost queues a msg_to_host row for a host: xml goes into the
// host's next scheduler reply as it is, as a real scheduler copies the
// row's xml (sched_types.cpp SCHEDULER_REPLY::write). A trickle-down is
// "<trickle_down>\n<result_name>R</result_name>\n<time>T</time>\n…</trickle_down>".
func (s *Server) SendMsgToHost(hostID int64, xml string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgsToHost[hostID] = append(s.msgsToHost[hostID], xml)
}

// TrickleDownXML is a trickle-down for a task, in the form the
// trickle_echo daemon (sched/trickle_echo.cpp) writes.
func TrickleDownXML(result string, t int64, body string) string {
	return "<trickle_down>\n<result_name>" + xmlEscape(result) + "</result_name>\n<time>" +
		strconv.FormatInt(t, 10) + "</time>\n" + body + "\n</trickle_down>"
}

// handleMsgsLocked records the request's trickle-ups and writes the
// host's queued messages into the reply (handle_msgs_from_host,
// handle_msgs_to_host); with Config.TrickleEcho each trickle-up comes
// back as a trickle-down of the same text, as trickle_echo does.
func (s *Server) handleMsgsLocked(rb *replyBuilder, hostID int64, msgs []msgFromHostXML, now time.Time) {
	for _, x := range msgs {
		m := parseMsgFromHost(x.Inner, hostID, now)
		s.stats.MsgsFromHost = append(s.stats.MsgsFromHost, m)
		s.log.Info("testproject: got msg from host", "variety", m.Variety, "result", m.ResultName)
		if s.cfg.TrickleEcho {
			s.msgsToHost[hostID] = append(s.msgsToHost[hostID], "<trickle_down>\n"+m.Text+"</trickle_down>")
		}
	}
	if len(msgs) > 0 {
		rb.line("<message_ack/>")
	}
	for _, x := range s.msgsToHost[hostID] {
		rb.line(x)
	}
	delete(s.msgsToHost, hostID)
}
