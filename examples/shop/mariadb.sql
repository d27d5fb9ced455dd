-- The shop warehouse (examples/shop/data) as MariaDB / MySQL tables, with their keys and
-- comments. Run from the repository root by a client that may read local files:
--   mariadb --local-infile=1 shop < examples/shop/mariadb.sql
-- examples/mariadb.sh and slayer-profile's MariaDB tests load it.
SET FOREIGN_KEY_CHECKS = 0;

CREATE TABLE customers (
    customer_id BIGINT PRIMARY KEY,
    name VARCHAR(100) NOT NULL COMMENT 'Full name as given at sign-up'
) COMMENT 'One row per customer of the shop';

CREATE TABLE stores (
    store_id BIGINT PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    opened_at DATETIME NOT NULL,
    tax_rate DOUBLE NOT NULL
) COMMENT 'The shop''s physical stores';

CREATE TABLE products (
    sku VARCHAR(20) PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    type VARCHAR(20) NOT NULL,
    price DECIMAL(10, 2) NOT NULL,
    description TEXT
);

CREATE TABLE orders (
    order_id BIGINT PRIMARY KEY,
    customer_id BIGINT NOT NULL,
    store_id BIGINT NOT NULL,
    ordered_at DATETIME NOT NULL,
    subtotal DECIMAL(10, 2) NOT NULL,
    tax_paid DECIMAL(10, 2) NOT NULL,
    order_total DECIMAL(10, 2) NOT NULL,
    status VARCHAR(20) NOT NULL,
    FOREIGN KEY (customer_id) REFERENCES customers (customer_id),
    FOREIGN KEY (store_id) REFERENCES stores (store_id)
);

CREATE TABLE order_items (
    order_item_id BIGINT PRIMARY KEY,
    order_id BIGINT NOT NULL,
    sku VARCHAR(20) NOT NULL,
    quantity BIGINT NOT NULL,
    unit_price DECIMAL(10, 2) NOT NULL,
    FOREIGN KEY (order_id) REFERENCES orders (order_id),
    FOREIGN KEY (sku) REFERENCES products (sku)
);

CREATE TABLE payments (
    payment_id BIGINT PRIMARY KEY,
    order_id BIGINT NOT NULL,
    payment_method VARCHAR(20) NOT NULL,
    amount DECIMAL(10, 2) NOT NULL,
    paid_at DATETIME NOT NULL,
    FOREIGN KEY (order_id) REFERENCES orders (order_id)
);

-- A supply is listed once per product it goes into: no key of its own.
CREATE TABLE supplies (
    supply_id VARCHAR(20) NOT NULL,
    name VARCHAR(100) NOT NULL,
    cost DECIMAL(10, 2) NOT NULL,
    perishable BOOLEAN NOT NULL,
    sku VARCHAR(20) NOT NULL,
    FOREIGN KEY (sku) REFERENCES products (sku)
);

LOAD DATA LOCAL INFILE 'examples/shop/data/customers.csv' INTO TABLE customers
    FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' IGNORE 1 LINES;
LOAD DATA LOCAL INFILE 'examples/shop/data/stores.csv' INTO TABLE stores
    FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' IGNORE 1 LINES;
LOAD DATA LOCAL INFILE 'examples/shop/data/products.csv' INTO TABLE products
    FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' IGNORE 1 LINES;
LOAD DATA LOCAL INFILE 'examples/shop/data/orders.csv' INTO TABLE orders
    FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' IGNORE 1 LINES;
LOAD DATA LOCAL INFILE 'examples/shop/data/order_items.csv' INTO TABLE order_items
    FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' IGNORE 1 LINES;
LOAD DATA LOCAL INFILE 'examples/shop/data/payments.csv' INTO TABLE payments
    FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' IGNORE 1 LINES;
LOAD DATA LOCAL INFILE 'examples/shop/data/supplies.csv' INTO TABLE supplies
    FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' IGNORE 1 LINES
    (supply_id, name, cost, @perishable, sku) SET perishable = (@perishable = 'true');

SET FOREIGN_KEY_CHECKS = 1;
