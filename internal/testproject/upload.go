package testproject

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
)

const (
	maxUploadHeader = 64 << 10
	// maxUnknownUpload bounds files accepted under AcceptUnknownUploads,
	// whose limit otherwise comes from the (unsigned) request.
	maxUnknownUpload = 256 << 20
)

// Upload handler statuses (sched/file_upload_handler.cpp).
const (
	uploadOK        = 0
	uploadTransient = 1
	uploadPermanent = -1
)

// uploadHeader is the XML part of an upload request, before <data>.
type uploadHeader struct {
	text    string
	hasData bool
}

// tag returns the trimmed text of the first <name>…</name> in the header.
func (h uploadHeader) tag(name string) (string, bool) {
	open, closeTag := "<"+name+">", "</"+name+">"
	i := strings.Index(h.text, open)
	if i < 0 {
		return "", false
	}
	rest := h.text[i+len(open):]
	j := strings.Index(rest, closeTag)
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:j]), true
}

func (h uploadHeader) number(name string) (float64, bool, error) {
	v, ok := h.tag(name)
	if !ok {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, true, fmt.Errorf("<%s>: %w", name, err)
	}
	return f, true, nil
}

// readUploadHeader reads lines up to and including the "<data>" line, or
// the whole body when there is none (a size query).
func readUploadHeader(br *bufio.Reader) (uploadHeader, error) {
	var sb strings.Builder
	for {
		line, err := br.ReadString('\n')
		if strings.TrimSpace(line) == "<data>" {
			return uploadHeader{text: sb.String(), hasData: true}, nil
		}
		sb.WriteString(line)
		if sb.Len() > maxUploadHeader {
			return uploadHeader{}, fmt.Errorf("upload request header exceeds %d bytes", maxUploadHeader)
		}
		if errors.Is(err, io.EOF) {
			return uploadHeader{text: sb.String()}, nil
		}
		if err != nil {
			return uploadHeader{}, fmt.Errorf("reading upload request header: %w", err)
		}
	}
}

func writeUploadReply(w http.ResponseWriter, status int, msg string, fileSize int64) {
	var b bytes.Buffer
	b.WriteString("<data_server_reply>\n")
	fmt.Fprintf(&b, "    <status>%d</status>\n", status)
	if msg != "" {
		fmt.Fprintf(&b, "    <message>%s</message>\n", xmlEscape(msg))
	}
	if fileSize >= 0 {
		fmt.Fprintf(&b, "    <file_size>%d</file_size>\n", fileSize)
	}
	b.WriteString("</data_server_reply>\n")
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write(b.Bytes())
}

// handleUpload implements the file_upload_handler protocol
// (PROTOCOLS.md §4.2): size queries, uploads resumed at an offset, size
// limits and an MD5 check of the whole file.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	br := bufio.NewReader(r.Body)
	h, err := readUploadHeader(br)
	if err != nil {
		s.uploadRefused(w, uploadPermanent, "", err.Error())
		return
	}
	if name, ok := h.tag("get_file_size"); ok {
		s.handleFileSize(w, name)
		return
	}
	if !strings.Contains(h.text, "<file_upload>") {
		s.uploadRefused(w, uploadPermanent, "", "upload request has neither <get_file_size> nor <file_upload>")
		return
	}
	name, _ := h.tag("name")
	if err := boinc.ValidateFileName(name, false); err != nil {
		s.uploadRefused(w, uploadPermanent, name, "bad file name: "+err.Error())
		return
	}
	if !h.hasData {
		s.uploadRefused(w, uploadPermanent, name, "upload request has no <data> tag")
		return
	}
	nbytes, ok, err := h.number("nbytes")
	if err == nil && (!ok || nbytes < 0 || nbytes != float64(int64(nbytes))) {
		err = fmt.Errorf("missing or bad <nbytes>")
	}
	if err != nil {
		s.uploadRefused(w, uploadPermanent, name, err.Error())
		return
	}
	offset, _, err := h.number("offset")
	if err == nil && (offset < 0 || offset > nbytes || offset != float64(int64(offset))) {
		err = fmt.Errorf("bad <offset> %g for %g bytes", offset, nbytes)
	}
	if err != nil {
		s.uploadRefused(w, uploadPermanent, name, err.Error())
		return
	}
	md5want, _ := h.tag("md5_cksum")
	hdrMax, hasHdrMax, err := h.number("max_nbytes")
	if err != nil {
		s.uploadRefused(w, uploadPermanent, name, err.Error())
		return
	}

	s.mu.Lock()
	delay := s.faults.UploadDelay
	s.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.done: // Close wakes a held upload, as every hanging handler
			return
		}
	}

	s.mu.Lock()
	s.stats.UploadRequests[name]++
	out, known := s.outputs[name]
	status, msg := uploadOK, ""
	limit := 0.0
	switch {
	case s.faults.UploadPermanent:
		status, msg = uploadPermanent, "uploads refused (injected fault)"
	case s.faults.UploadFailures > 0:
		s.faults.UploadFailures--
		status, msg = uploadTransient, "upload failed (injected fault)"
	case known:
		limit = out.maxNBytes
		if s.sign != nil {
			sig, _ := h.tag("xml_signature")
			signedMax := limit
			if hasHdrMax {
				signedMax = hdrMax
			}
			if sig == "" {
				status, msg = uploadPermanent, "missing <xml_signature>"
			} else if err := verifyMD5Hex(&s.sign.key.PublicKey, []byte(uploadSignedText(name, signedMax)), sig); err != nil {
				status, msg = uploadPermanent, "invalid <xml_signature>: "+err.Error()
			}
		}
	case s.cfg.AcceptUnknownUploads:
		limit = s.cfg.Job.MaxOutputBytes
		if hasHdrMax && hdrMax > 0 {
			limit = min(hdrMax, maxUnknownUpload)
		}
	default:
		status, msg = uploadPermanent, "no such output file on this project"
	}
	if status == uploadOK && nbytes > limit {
		status, msg = uploadPermanent, fmt.Sprintf("file size (%.0f bytes) exceeds limit (%.0f bytes)", nbytes, limit)
	}
	if status == uploadOK {
		if done, ok := s.stats.Uploaded[name]; ok {
			if int64(len(done)) == int64(nbytes) && (md5want == "" || md5want == md5Hex(done)) {
				s.mu.Unlock()
				writeUploadReply(w, uploadOK, "", -1)
				return
			}
			status, msg = uploadPermanent, "file already uploaded with different contents"
			s.addErrorLocked("upload of %s: already uploaded with different size or md5", name)
		}
	}
	var have []byte
	if status == uploadOK {
		switch {
		case s.uploading[name]:
			status, msg = uploadTransient, "another upload of this file is in progress"
		case int(offset) > len(s.partial[name]):
			status, msg = uploadTransient, fmt.Sprintf("offset %.0f beyond the %d bytes received so far", offset, len(s.partial[name]))
		default:
			s.uploading[name] = true
			have = bytes.Clone(s.partial[name][:int(offset)])
		}
	}
	s.mu.Unlock()
	if status != uploadOK {
		s.uploadRefused(w, status, name, msg)
		return
	}

	need := int64(nbytes) - int64(offset)
	buf := bytes.NewBuffer(have)
	got, rerr := io.Copy(buf, io.LimitReader(br, need))
	data := buf.Bytes()

	s.mu.Lock()
	delete(s.uploading, name)
	if got < need {
		s.partial[name] = data
		s.mu.Unlock()
		msg := fmt.Sprintf("received %d of %d bytes", got, need)
		if rerr != nil {
			msg += ": " + rerr.Error()
		}
		s.log.Info("testproject: partial upload", "name", name, "bytes", len(data), "nbytes", int64(nbytes))
		writeUploadReply(w, uploadTransient, msg, -1)
		return
	}
	delete(s.partial, name)
	if md5want != "" && md5want != md5Hex(data) {
		s.addErrorLocked("upload of %s: md5 %s does not match the declared %s", name, md5Hex(data), md5want)
		s.mu.Unlock()
		s.uploadRefused(w, uploadPermanent, name, "md5 checksum mismatch")
		return
	}
	s.stats.Uploaded[name] = data
	s.mu.Unlock()
	s.log.Info("testproject: upload complete", "name", name, "bytes", len(data), "offset", int64(offset))
	writeUploadReply(w, uploadOK, "", -1)
}

func (s *Server) uploadRefused(w http.ResponseWriter, status int, name, msg string) {
	s.log.Info("testproject: upload refused", "name", name, "status", status, "reason", msg)
	writeUploadReply(w, status, msg, -1)
}

// handleFileSize answers <get_file_size>: the bytes held for the file,
// complete or partial; 0 when none.
func (s *Server) handleFileSize(w http.ResponseWriter, name string) {
	if err := boinc.ValidateFileName(name, false); err != nil {
		s.uploadRefused(w, uploadPermanent, name, "bad file name: "+err.Error())
		return
	}
	s.mu.Lock()
	_, known := s.outputs[name]
	var size int64
	if b, ok := s.stats.Uploaded[name]; ok {
		size = int64(len(b))
	} else {
		size = int64(len(s.partial[name]))
	}
	s.mu.Unlock()
	if !known && !s.cfg.AcceptUnknownUploads {
		s.uploadRefused(w, uploadPermanent, name, "no such output file on this project")
		return
	}
	writeUploadReply(w, uploadOK, "", size)
}
