(()=>{var m="./favicon-FOKUP5Y5.ico";})();
//# sourceMappingURL=favicon-M34RF7BI.js.map
