package contexts

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/blob"
)

// List returns the contexts of project projectID, newest first, at most
// limit. The contexts table has no index by project (the original design
// reads contexts by id only), so this scans the table with a filter:
// meant for the console, not for a request path that must scale.
func (s *Store) List(ctx context.Context, projectID string, limit int) ([]Context, error) {
	var out []Context
	p := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{
		TableName:                 aws.String(s.names.Contexts),
		FilterExpression:          aws.String("projectId = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: projectID}},
	})
	for p.HasMorePages() && (limit <= 0 || len(out) < limit) {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("contexts: list %s: %w", projectID, err)
		}
		for _, it := range page.Items {
			out = append(out, parse(it))
		}
	}
	slices.SortFunc(out, func(a, b Context) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ArchiveSize returns the size in bytes of the context's profile archive,
// or -1 when it has none yet (never uploaded nor persisted).
func (s *Store) ArchiveSize(ctx context.Context, c Context) (int64, error) {
	n, err := blob.Size(ctx, s.blobs, storageKey(c))
	if errors.Is(err, blob.ErrNotFound) {
		return -1, nil
	}
	return n, err
}
