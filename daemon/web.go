package daemon

import (
	"context"
	"errors"
	"log/slog"

	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/webui"
)

// startWeb opens the web dashboard (package webui) beside GUI RPC, with
// the same Backend GUI RPC serves (rpcBackend): every action a page
// takes is the one boinccmd's op would take. A failure is logged and the
// daemon runs on without it, as for GUI RPC.
func (d *Daemon) startWeb(ctx context.Context) {
	w := d.cfg.Web
	addr := d.opt.WebAddr
	if addr == "" {
		if !w.Enabled {
			return
		}
		gui := d.cfg.GUIRPC.Address
		if d.opt.GUIRPCAddr != "" {
			gui = d.opt.GUIRPCAddr
		}
		addr = w.WebListen(gui)
	}
	if addr == "off" {
		return
	}
	pass, err := guirpc.OpenPassword(d.opt.DataDir, d.log)
	if err != nil {
		d.log.Error("web dashboard disabled: cannot read or create the password file", slog.Any("err", err))
		return
	}
	hosts, err := guirpc.LoadRemoteHosts(d.opt.DataDir)
	if err != nil {
		d.log.Warn("remote_hosts.cfg ignored", slog.Any("err", err))
	}
	hosts = append(hosts, d.cfg.GUIRPC.AllowHosts...)
	srv, err := webui.Listen(webui.Config{
		Addr:        addr,
		TLSCert:     w.TLSCert,
		TLSKey:      w.TLSKey,
		AllowRemote: d.cc.eff.AllowRemoteGUIRPC,
		AllowHosts:  hosts,
		Password:    pass,
		Backend:     rpcBackend{d},
		Log:         d.elog,
		DataDir:     d.opt.DataDir,
		Logger:      d.opt.Logger.With(slog.String("component", "webui")),
	})
	if err != nil {
		d.log.Error("web dashboard disabled", slog.String("address", addr), slog.Any("err", err))
		return
	}
	d.webURL = srv.URL()
	d.log.Info("web dashboard listening", slog.String("url", d.webURL))
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Warn("web dashboard stopped", slog.Any("err", err))
		}
	}()
}

// WebURL is the dashboard's address ("" before Run or when disabled);
// tests use it with port 0.
func (d *Daemon) WebURL(ctx context.Context) (string, error) {
	var u string
	err := d.peek(ctx, func() { u = d.webURL })
	return u, err
}
