package sqlite

import (
	"context"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

var _ store.Admin = (*Store)(nil)

// maintenanceSQL holds SQLite's equivalents of the original design's
// maintenance statements: ANALYZE then PRAGMA optimize for statistics,
// VACUUM (rewrites the database file, reclaiming free pages; SQLite has no
// VACUUM ANALYZE) and REINDEX (rebuilds every index).
var maintenanceSQL = map[store.MaintenanceOp][]string{
	store.MaintainAnalyze: {"ANALYZE", "PRAGMA optimize"},
	store.MaintainVacuum:  {"VACUUM"},
	store.MaintainReindex: {"REINDEX"},
}

// Maintain implements store.Admin.
func (s *Store) Maintain(ctx context.Context, ops []store.MaintenanceOp) ([]store.MaintenanceStep, error) {
	return store.RunMaintenance(ctx, "sqlite", ops, maintenanceSQL, func(ctx context.Context, stmt string) error {
		_, err := s.db.ExecContext(ctx, stmt)
		return err
	})
}

// ExportProducts implements store.Admin. The store's one connection is
// held until the export ends.
func (s *Store) ExportProducts(ctx context.Context, fn func(store.Product) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT `+prodCols+` FROM product ORDER BY id`)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	return store.EachRow(rows, func() (store.Product, error) { return scanProduct(rows) }, fn, mapErr)
}

// ExportCategories implements store.Admin.
func (s *Store) ExportCategories(ctx context.Context, fn func(store.Category) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT `+catCols+` FROM category ORDER BY id`)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	return store.EachRow(rows, func() (store.Category, error) { return scanCat(rows) }, fn, mapErr)
}

// integritySQL holds, per check, a query returning the offending rows'
// descriptions (the original design's data-validation queries, with NOT
// EXISTS).
var integritySQL = map[string]string{
	store.CheckOrphanedProducts: `SELECT p.id || ' -> category ' || p.category_id FROM product p
		WHERE p.category_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM category c WHERE c.id = p.category_id)
		ORDER BY p.id`,
	store.CheckOrphanedCategories: `SELECT c.id || ' -> navigation ' || c.navigation_id FROM category c
		WHERE c.navigation_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM navigation n WHERE n.id = c.navigation_id)
		ORDER BY c.id`,
	store.CheckInvalidJobStatus: `SELECT id || ': ' || coalesce(status, 'NULL') FROM scrape_job
		WHERE status IS NULL OR status NOT IN ('queued', 'running', 'completed', 'failed')
		ORDER BY id`,
}

// CheckIntegrity implements store.Admin.
func (s *Store) CheckIntegrity(ctx context.Context) ([]store.Finding, error) {
	return store.RunIntegrity(ctx, "sqlite", integritySQL, func(ctx context.Context, query string, row func(string)) error {
		rows, err := s.db.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		scan := func() (string, error) {
			var ex string
			err := rows.Scan(&ex)
			return ex, err
		}
		return store.EachRow(rows, scan, func(ex string) error { row(ex); return nil }, nil)
	})
}
