package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// runCols are the columns of Run without its log, in the order of
// scanRun's fields; runLogCols adds the log.
func (s *SQL) runCols(withLog bool) string {
	cols := s.d.RunCols
	if withLog {
		cols += ", log"
	} else {
		cols += ", NULL"
	}
	return cols
}

func (s *SQL) scanRun(row Row) (Run, error) {
	var r Run
	var log *string
	if err := row.Scan(&r.ID, &r.StartURL, &r.Node, &r.MaxPages, &r.State, &r.Pages, &r.Products, &r.Failures,
		&r.LastError, &r.StartedAt, &r.UpdatedAt, &r.EndedAt, &log); err != nil {
		return r, s.mapErr(err)
	}
	r.StartedAt, r.UpdatedAt, r.EndedAt = r.StartedAt.UTC(), r.UpdatedAt.UTC(), utcPtr(r.EndedAt)
	if log != nil {
		r.Log = []string{}
		if err := json.Unmarshal([]byte(*log), &r.Log); err != nil {
			return r, fmt.Errorf("%s: crawl_run.log: %w", s.d.Name, err)
		}
	}
	return r, nil
}

// StartRun implements Runs.
func (s *SQL) StartRun(ctx context.Context, in NewRun) (Run, error) {
	if err := ValidateRun(in); err != nil {
		return Run{}, err
	}
	cols, n := "start_url, node, max_pages, started_at, updated_at", 4
	if s.d.NewID != nil {
		cols, n = "id, "+cols, 5
	}
	marks := make([]string, n)
	for i := range marks {
		marks[i] = s.p(i + 1)
	}
	marks = append(marks, marks[n-1]) // updated_at = started_at
	now := s.opts.Clock()
	return s.scanRun(s.db.QueryRow(ctx, `INSERT INTO crawl_run (`+cols+`) VALUES (`+strings.Join(marks, ", ")+`)
		RETURNING `+s.runCols(true), s.insertArgs(in.StartURL, in.Node, in.MaxPages, now)...))
}

// UpdateRun implements Runs.
func (s *SQL) UpdateRun(ctx context.Context, id string, p RunProgress) (Run, error) {
	return s.setRun(ctx, id, "", p, nil)
}

// EndRun implements Runs.
func (s *SQL) EndRun(ctx context.Context, id string, state RunState, p RunProgress, errMsg string) (Run, error) {
	if !state.Ended() {
		return Run{}, fmt.Errorf("%w: a run ends as succeeded, failed or aborted, not %q", ErrInvalid, state)
	}
	var msg *string
	if errMsg != "" {
		m := CutLine(errMsg, 4*RunLogLineBytes)
		msg = &m
	}
	return s.setRun(ctx, id, state, p, msg)
}

// setRun writes p to a running run, and ends it in state unless state is
// "".
func (s *SQL) setRun(ctx context.Context, id string, state RunState, p RunProgress, errMsg *string) (Run, error) {
	if err := ValidateID(id); err != nil {
		return Run{}, err
	}
	p, err := NormalizeProgress(p)
	if err != nil {
		return Run{}, err
	}
	id = strings.ToLower(id)
	now := s.opts.Clock()
	set := `pages = ` + s.p(2) + `, products = ` + s.p(3) + `, failures = ` + s.p(4) + `, log = ` + s.p(5) +
		`, updated_at = ` + s.p(6)
	args := []any{id, p.Pages, p.Products, p.Failures, JSONText(p.Log), now}
	if state != "" {
		set += `, state = ` + s.p(7) + `, last_error = ` + s.p(8) + `, ended_at = ` + s.p(6)
		args = append(args, string(state), errMsg)
	}
	r, err := s.scanRun(s.db.QueryRow(ctx, `UPDATE crawl_run SET `+set+` WHERE id = `+s.p(1)+
		` AND state = 'running' RETURNING `+s.runCols(true), args...))
	if errors.Is(err, ErrNotFound) {
		if _, gerr := s.GetRun(ctx, id); gerr != nil {
			return Run{}, gerr
		}
		return Run{}, ErrRunEnded
	}
	return r, err
}

// GetRun implements Runs.
func (s *SQL) GetRun(ctx context.Context, id string) (Run, error) {
	if err := ValidateID(id); err != nil {
		return Run{}, err
	}
	return s.scanRun(s.db.QueryRow(ctx, `SELECT `+s.runCols(true)+` FROM crawl_run WHERE id = `+s.p(1), strings.ToLower(id)))
}

// ListRuns implements Runs.
func (s *SQL) ListRuns(ctx context.Context, f RunFilter) ([]Run, int, error) {
	limit, offset, err := normalizePage(f.Limit, f.Offset, DefaultRunLimit)
	if err != nil {
		return nil, 0, err
	}
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM crawl_run`).Scan(&total); err != nil {
		return nil, 0, s.mapErr(err)
	}
	rows, err := s.db.Query(ctx, `SELECT `+s.runCols(false)+` FROM crawl_run ORDER BY started_at DESC, id DESC LIMIT `+
		s.p(1)+` OFFSET `+s.p(2), limit, offset)
	if err != nil {
		return nil, 0, s.mapErr(err)
	}
	out, err := collect(s, rows, s.scanRun)
	return out, total, err
}

// EndStaleRuns implements Runs.
func (s *SQL) EndStaleRuns(ctx context.Context, idle time.Duration, msg string) (int, error) {
	if idle <= 0 {
		return 0, fmt.Errorf("%w: a stale run's idle time must be positive", ErrInvalid)
	}
	now := s.opts.Clock()
	n, err := s.db.Exec(ctx, `UPDATE crawl_run SET state = 'failed', last_error = `+s.p(1)+`, ended_at = `+s.p(2)+
		`, updated_at = `+s.p(2)+` WHERE state = 'running' AND updated_at < `+s.p(3), msg, now, now.Add(-idle))
	return int(n), s.mapErr(err)
}

// RunProducts implements Runs. It reads RunProductsPage products per
// query, resuming after the last one read (keyset), and calls fn between
// queries, so that a slow fn (a client reading an export slowly) never
// holds a database connection (SQLite's only one) and memory holds one
// page.
func (s *SQL) RunProducts(ctx context.Context, id string, fn func(Product) error) error {
	r, err := s.GetRun(ctx, id)
	if err != nil {
		return err
	}
	end := s.opts.Clock()
	if r.EndedAt != nil {
		end = *r.EndedAt
	}
	var last *Product
	for {
		// After the first page the range starts at the last product's
		// time, so that each query seeks in idx_product_scraped rather
		// than walking the run's earlier products again.
		w := NewWhere(s.d.Placeholder)
		if last == nil {
			w.Add("last_scraped_at >= ?", r.StartedAt)
		} else {
			w.Add("last_scraped_at >= ?", last.LastScrapedAt)
			w.Add("(last_scraped_at > ? OR id > ?)", last.LastScrapedAt, last.ID)
		}
		w.Add("last_scraped_at <= ?", end)
		rows, err := s.db.Query(ctx, `SELECT `+s.d.ProdCols+` FROM product`+w.String()+
			` ORDER BY last_scraped_at, id LIMIT `+w.Arg(RunProductsPage), w.Args()...)
		if err != nil {
			return s.mapErr(err)
		}
		page, err := collect(s, rows, s.scanProduct)
		if err != nil {
			return err
		}
		for _, p := range page {
			if err := fn(p); err != nil {
				return err
			}
		}
		if len(page) < RunProductsPage {
			return nil
		}
		last = &page[len(page)-1]
	}
}
