package guirpc

import (
	"context"
	"log/slog"
	"time"
)

// Notice is one entry of the Manager's Notices tab (lib/notice.cpp
// NOTICE), with the fields get_notices writes.
type Notice struct {
	Seqno       int64
	Title       string
	Description string // HTML, written as CDATA
	CreateTime  time.Time
	ArrivalTime time.Time
	Private     bool
	ProjectName string
	Category    string // "client", "scheduler", "" for news-feed items
	Link        string
}

// NoticeList is what get_notices reads.
type NoticeList struct {
	// Notices are all the client holds, oldest (lowest seqno) first.
	Notices []Notice
	// Removals counts the notices removed since the client started: a
	// connection that saw another count is told to reload everything.
	Removals uint64
}

// NoticeSource is implemented by a Backend that keeps notices; a backend
// without it has none to show.
type NoticeSource interface {
	Notices(ctx context.Context) (*NoticeList, error)
}

// noticeConn is what get_notices last told one connection: the C++
// client flags every open connection when notices are removed
// (GUI_RPC_CONN::notice_refresh), and that connection's next get_notices
// starts with the seqno -1 marker and then sends them all, so that a GUI
// drops what is gone. A connection that never asked has nothing to drop.
type noticeConn struct {
	asked    bool
	removals uint64
}

// opNotices serves get_notices and get_notices_public (client/
// cs_notice.cpp NOTICES::write): the notices with a seqno above the one
// asked for, oldest first; the public variant leaves out private ones.
func opNotices(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	after := parseSeqno(req)
	var list *NoticeList
	if src, ok := s.cfg.Backend.(NoticeSource); ok {
		var err error
		if list, err = src.Notices(ctx); err != nil {
			s.log.Warn("GUI RPC: cannot read notices", slog.String("op", req.op), slog.Any("err", err))
			w.str("", "error", err.Error())
			return nil
		}
	}
	if list == nil {
		list = &NoticeList{}
	}
	refresh := false
	if nc := req.notices; nc != nil {
		refresh = nc.asked && nc.removals != list.Removals
		nc.asked, nc.removals = true, list.Removals
	}
	writeNotices(w, list.Notices, after, refresh, req.op == "get_notices_public")
	return nil
}

// writeNotices writes <notices>: with refresh, the seqno -1 marker and
// then every notice; otherwise those above after.
func writeNotices(w *xw, list []Notice, after int64, refresh, public bool) {
	w.line("<notices>")
	if refresh {
		writeNotice(w, &Notice{Seqno: -1})
		after = -1
	}
	for i := range list {
		n := &list[i]
		if n.Seqno <= after || public && n.Private {
			continue
		}
		writeNotice(w, n)
	}
	w.line("</notices>")
}

// writeNotice is lib/notice.cpp NOTICE::write for a GUI, line for line.
// Where the C++ client pastes the title and project name in raw, boincd
// escapes them (BOINC's parser unescapes, so GUIs show the same text): a
// news item titled "a < b" must not break the reply. A "]]>" inside the
// description or link splits the CDATA section rather than ending it.
func writeNotice(w *xw, n *Notice) {
	w.line("<notice>")
	w.str("   ", "title", n.Title)
	w.cdata("   ", "description", "\n", n.Description)
	w.f("   ", "create_time", unix(n.CreateTime))
	w.f("   ", "arrival_time", unix(n.ArrivalTime))
	w.bool01("   ", "is_private", n.Private)
	w.str("   ", "project_name", n.ProjectName)
	w.str("   ", "category", n.Category)
	w.cdata("   ", "link", "", n.Link)
	w.int("   ", "seqno", n.Seqno)
	w.line("</notice>")
}
