package store

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Admin is the operator's side of a Store: the original design's
// maintenance, backup and data-validation operations. Both backends
// implement it (`quarry datashelf maintain|export|check` run it).
type Admin interface {
	// Maintain runs the maintenance operations ops, in order, and returns
	// the statements it ran. Nil ops means every operation (AllMaintenance).
	Maintain(ctx context.Context, ops []MaintenanceOp) ([]MaintenanceStep, error)
	// ExportProducts calls fn with every product, ordered by id, reading
	// them one by one from the database (never all at once). An error
	// from fn stops the export and is returned.
	ExportProducts(ctx context.Context, fn func(Product) error) error
	// ExportCategories is ExportProducts for categories.
	ExportCategories(ctx context.Context, fn func(Category) error) error
	// CheckIntegrity runs the original design's data-validation queries and
	// returns one Finding per check (Count 0 when the check found nothing),
	// in the order of IntegrityChecks.
	CheckIntegrity(ctx context.Context) ([]Finding, error)
}

// MaintenanceOp is one maintenance operation.
type MaintenanceOp string

// Maintenance operations. Each backend runs its own statements for them:
// PostgreSQL ANALYZE, VACUUM ANALYZE and REINDEX TABLE per table; SQLite
// ANALYZE followed by PRAGMA optimize, VACUUM and REINDEX.
const (
	// MaintainAnalyze refreshes the planner's statistics.
	MaintainAnalyze MaintenanceOp = "analyze"
	// MaintainVacuum reclaims the space of deleted and updated rows.
	MaintainVacuum MaintenanceOp = "vacuum"
	// MaintainReindex rebuilds indexes.
	MaintainReindex MaintenanceOp = "reindex"
)

// AllMaintenance is every maintenance operation in the order Maintain runs
// them by default.
var AllMaintenance = []MaintenanceOp{MaintainAnalyze, MaintainVacuum, MaintainReindex}

// ParseMaintenanceOp returns the operation named s or ErrInvalid.
func ParseMaintenanceOp(s string) (MaintenanceOp, error) {
	for _, op := range AllMaintenance {
		if string(op) == s {
			return op, nil
		}
	}
	return "", fmt.Errorf("%w: maintenance operation %q (want analyze, vacuum or reindex)", ErrInvalid, s)
}

// MaintenanceStep is one statement Maintain ran.
type MaintenanceStep struct {
	Op        MaintenanceOp `json:"op"`
	Statement string        `json:"statement"`
	Took      time.Duration `json:"took"`
}

// RunMaintenance is the Maintain of every backend: it runs, for each of
// ops in order (nil: AllMaintenance), the statements stmts holds for it
// with exec, and reports each with its time. An operation stmts does not
// know is ErrInvalid; a failed statement stops the run (the steps before
// it are returned) with an error naming backend and the statement.
func RunMaintenance(ctx context.Context, backend string, ops []MaintenanceOp, stmts map[MaintenanceOp][]string,
	exec func(ctx context.Context, stmt string) error) ([]MaintenanceStep, error) {
	if ops == nil {
		ops = AllMaintenance
	}
	steps := []MaintenanceStep{}
	for _, op := range ops {
		list, ok := stmts[op]
		if !ok {
			return steps, fmt.Errorf("%w: maintenance operation %q", ErrInvalid, op)
		}
		for _, stmt := range list {
			start := time.Now()
			if err := exec(ctx, stmt); err != nil {
				return steps, fmt.Errorf("%s: %s: %w", backend, stmt, err)
			}
			steps = append(steps, MaintenanceStep{Op: op, Statement: stmt, Took: time.Since(start)})
		}
	}
	return steps, nil
}

// Integrity checks, the original design's data-validation queries.
const (
	// CheckOrphanedProducts counts products whose category_id names no
	// category.
	CheckOrphanedProducts = "orphaned_products"
	// CheckOrphanedCategories counts categories whose navigation_id names
	// no navigation row.
	CheckOrphanedCategories = "orphaned_categories"
	// CheckInvalidJobStatus counts jobs whose status is not queued,
	// running, completed or failed.
	CheckInvalidJobStatus = "invalid_job_status"
)

// IntegrityChecks lists the checks CheckIntegrity runs, in order.
var IntegrityChecks = []string{CheckOrphanedProducts, CheckOrphanedCategories, CheckInvalidJobStatus}

// MaxFindingExamples bounds Finding.Examples.
const MaxFindingExamples = 10

// Finding is the result of one integrity check.
type Finding struct {
	// Check is one of IntegrityChecks.
	Check string `json:"check"`
	// Count is the number of offending rows.
	Count int `json:"count"`
	// Examples describes up to MaxFindingExamples offending rows ("id →
	// missing id", or "id: status").
	Examples []string `json:"examples"`
}

// RunIntegrity is the CheckIntegrity of every backend: for each of
// IntegrityChecks it runs the query queries holds for it through rows,
// which calls row with each offending row's description, and counts them
// into a Finding (keeping MaxFindingExamples examples). Errors name
// backend and the check.
func RunIntegrity(ctx context.Context, backend string, queries map[string]string,
	rows func(ctx context.Context, query string, row func(description string)) error) ([]Finding, error) {
	out := make([]Finding, 0, len(IntegrityChecks))
	for _, check := range IntegrityChecks {
		f := Finding{Check: check, Examples: []string{}}
		err := rows(ctx, queries[check], func(ex string) {
			f.Count++
			if len(f.Examples) < MaxFindingExamples {
				f.Examples = append(f.Examples, ex)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s: check %s: %w", backend, check, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Export tables and formats.
const (
	ExportProduct  = "product"
	ExportCategory = "category"
	FormatCSV      = "csv"
	FormatJSONL    = "jsonl"
)

// ProductColumns and CategoryColumns are the CSV header of an export: the
// tables' columns, in table order.
var (
	ProductColumns = []string{"id", "category_id", "title", "source_url", "source_id", "price", "currency",
		"image_urls", "summary", "specs", "available", "last_scraped_at", "created_at", "updated_at"}
	CategoryColumns = []string{"id", "navigation_id", "title", "source_url", "product_count",
		"last_scraped_at", "created_at", "updated_at"}
)

// Export writes every row of table (ExportProduct or ExportCategory) to w
// in format (FormatCSV: a header line then one record per row, NULL as an
// empty field, JSON columns as JSON text, times RFC 3339 in UTC, prices
// with two decimals; FormatJSONL: one JSON object per line, as the API
// returns it). Rows are streamed: memory does not grow with the table. It
// returns the number of rows written.
func Export(ctx context.Context, a Admin, table, format string, w io.Writer) (int, error) {
	switch table {
	case ExportProduct:
		return WriteProducts(format, w, func(fn func(Product) error) error { return a.ExportProducts(ctx, fn) })
	case ExportCategory:
		n, err := writeRows(format, w, CategoryColumns, categoryRecord, func(fn func(Category) error) error {
			return a.ExportCategories(ctx, fn)
		})
		if err != nil {
			return n, fmt.Errorf("export %s: %w", table, err)
		}
		return n, nil
	default:
		if err := checkFormat(format); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: export table %q (want product or category)", ErrInvalid, table)
	}
}

// WriteProducts writes the products each yields to w in format, as
// Export writes the product table, and returns how many it wrote. each
// calls its function with every product in turn (ExportProducts,
// Runs.RunProducts), so that memory does not grow with their number.
func WriteProducts(format string, w io.Writer, each func(fn func(Product) error) error) (int, error) {
	n, err := writeRows(format, w, ProductColumns, productRecord, each)
	if err != nil {
		return n, fmt.Errorf("export %s: %w", ExportProduct, err)
	}
	return n, nil
}

func checkFormat(format string) error {
	if format != FormatCSV && format != FormatJSONL {
		return fmt.Errorf("%w: export format %q (want csv or jsonl)", ErrInvalid, format)
	}
	return nil
}

// writeRows writes the rows each yields to w in format: CSV records (after
// the header) or JSON lines.
func writeRows[T any](format string, w io.Writer, header []string, record func(T) []string, each func(fn func(T) error) error) (int, error) {
	if err := checkFormat(format); err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var cw *csv.Writer
	if format == FormatCSV {
		cw = csv.NewWriter(bw)
		if err := cw.Write(header); err != nil {
			return 0, err
		}
	}
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	err := each(func(v T) error {
		n++
		if cw != nil {
			return cw.Write(record(v))
		}
		return enc.Encode(v)
	})
	if err != nil {
		return n, err
	}
	if cw != nil {
		cw.Flush()
		if err := cw.Error(); err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

func opt(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func jsonField(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func productRecord(p Product) []string {
	price := ""
	if p.Price != nil {
		price = strconv.FormatFloat(*p.Price, 'f', 2, 64)
	}
	return []string{p.ID, opt(p.CategoryID), p.Title, p.SourceURL, opt(p.SourceID), price, p.Currency,
		jsonField(p.ImageURLs), opt(p.Summary), jsonField(p.Specs), strconv.FormatBool(p.Available),
		stamp(p.LastScrapedAt), stamp(p.CreatedAt), stamp(p.UpdatedAt)}
}

func categoryRecord(c Category) []string {
	return []string{c.ID, opt(c.NavigationID), c.Title, c.SourceURL, strconv.Itoa(c.ProductCount),
		stamp(c.LastScrapedAt), stamp(c.CreatedAt), stamp(c.UpdatedAt)}
}

// Rows is what EachRow needs of a driver's result set: pgx.Rows and
// *sql.Rows both have it.
type Rows interface {
	Next() bool
	Err() error
}

// EachRow calls fn with each row of rows as scan reads it (scan reads the
// current row), stopping at the first error of either, which it returns
// as it is; at the end it returns rows' own error (through mapErr when not
// nil, the backend's error mapping). The caller closes rows.
func EachRow[T any](rows Rows, scan func() (T, error), fn func(T) error, mapErr func(error) error) error {
	for rows.Next() {
		v, err := scan()
		if err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if mapErr == nil {
		return rows.Err()
	}
	return mapErr(rows.Err())
}
