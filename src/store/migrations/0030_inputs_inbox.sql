-- The approvals inbox (GET /api/v1/inputs): a tenant's pending requests in request_id
-- (= creation) order, without scanning answered ones.
create index input_requests_inbox on input_requests (tenant, request_id) where state = 'pending';
