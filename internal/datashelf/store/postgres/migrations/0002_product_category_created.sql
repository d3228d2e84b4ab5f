-- A category's products newest first (the catalogue's default order, and
-- its keyset pages) read in index order instead of sorting the whole
-- category: the document's separate indexes on category_id and created_at
-- serve one or the other, not both. On a large existing table, create it
-- beforehand with CREATE INDEX CONCURRENTLY under the same name to avoid
-- holding writes while it builds (this migration then finds it).
CREATE INDEX IF NOT EXISTS idx_product_category_created ON product (category_id, created_at DESC, id);
